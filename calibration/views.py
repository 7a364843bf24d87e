from django.shortcuts import render

from judgeapp.roles import Role, role_required


@role_required(Role.ANNOTATOR)
def queue(request):
    return render(request, "calibration/queue.html", {})
