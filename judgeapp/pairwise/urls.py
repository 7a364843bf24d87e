from django.urls import path

from judgeapp.pairwise import views

app_name = "pairwise"
urlpatterns = [
    path("new/", views.pairwise_new, name="new"),
    path("estimate/", views.run_estimate, name="estimate"),
    path("runs/<str:run_id>/cases/<str:case_id>/", views.pairwise_case, name="case"),
]
