from django.urls import path

from calibration import views

app_name = "calibration"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("samples/new/", views.sample_new, name="sample_new"),
    path("samples/<uuid:sample_uuid>/", views.sample_detail, name="sample_detail"),
    path("samples/<uuid:sample_uuid>/instructions/", views.sample_instructions, name="sample_instructions"),
    path("annotators/invite/", views.annotator_invite, name="annotator_invite"),
    path("annotators/assign/", views.annotator_assign, name="annotator_assign"),
    path("samples/<uuid:sample_uuid>/resolve/", views.adjudication, name="adjudication"),
    path("samples/<uuid:sample_uuid>/resolve/margin/", views.adjudication_margin, name="adjudication_margin"),
    path("samples/<uuid:sample_uuid>/resolve/<int:position>/", views.adjudication_resolve, name="adjudication_resolve"),
    path("samples/<uuid:sample_uuid>/candidates/", views.candidates, name="candidates"),
    path("samples/<uuid:sample_uuid>/candidates/new/", views.candidate_new, name="candidate_new"),
    path("candidates/<uuid:candidate_uuid>/adopt/", views.candidate_adopt, name="candidate_adopt"),
    path("level/", views.level_set, name="level_set"),
    path("policy/", views.policy_set, name="policy_set"),
    path("locks/<str:judge_name>/<str:judge_version>/unlock/", views.lock_unlock, name="lock_unlock"),
    # The annotator's blind queue.
    path("queue/", views.queue, name="queue"),
    path("queue/undo/", views.queue_undo, name="queue_undo"),
    path("queue/items/<uuid:assignment_uuid>/", views.queue_item, name="queue_item"),
    path("queue/items/<uuid:assignment_uuid>/label/", views.queue_label, name="queue_label"),
    path("queue/items/<uuid:assignment_uuid>/skip/", views.queue_skip, name="queue_skip"),
    path("queue/items/<uuid:assignment_uuid>/notes/", views.queue_note, name="queue_note"),
]
