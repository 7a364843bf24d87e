# The Celery app (judgeapp/celery.py) is imported where a task is sent (judgeapp/judging/taskqueue.py) and by
# `celery -A judgeapp`, which finds judgeapp.celery by itself; not with Django, so that a command that sends
# no task does not load Celery.
