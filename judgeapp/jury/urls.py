from django.urls import path

from judgeapp.jury import views

app_name = "jury"
urlpatterns = [
    path("new/", views.jury_new, name="new"),
    path("estimate/", views.run_estimate, name="estimate"),
    path("runs/<str:run_id>/cases/<str:case_id>/", views.jury_case, name="case"),
]
