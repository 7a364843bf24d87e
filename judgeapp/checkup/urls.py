from django.urls import path

from judgeapp.checkup import views

app_name = "checkup"
urlpatterns = [
    path("judges/<str:judge_name>/", views.checkup_start, name="start"),
]
