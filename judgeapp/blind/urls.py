from django.urls import path

from judgeapp.blind import views as blind

app_name = "blind"

urlpatterns = [
    path("", blind.blind_index, name="index"),
    path("new/", blind.blind_new, name="new"),
    path("new/upload-row/", blind.blind_upload_row, name="upload_row"),
    path("<uuid:uuid>/leakage/", blind.blind_leakage, name="leakage"),
    path("runs/<str:run_id>/reveal/", blind.blind_reveal, name="reveal"),
    path("runs/<str:run_id>/comparison.json", blind.blind_comparison_json, name="comparison_json"),
]
