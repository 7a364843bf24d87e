from django.urls import path

from calibration import views

app_name = "calibration"

urlpatterns = [
    path("queue/", views.queue, name="queue"),
]
