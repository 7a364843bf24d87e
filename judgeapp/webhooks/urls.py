"""The webhooks page and its buttons (leads only)."""

from django.urls import path

from judgeapp.webhooks import views

app_name = "webhooks"

urlpatterns = [
    path("", views.webhooks, name="index"),
    path("<uuid:uuid>/test/", views.webhook_test, name="test"),
    path("<uuid:uuid>/active/", views.webhook_active, name="active"),
    path("<uuid:uuid>/delete/", views.webhook_delete, name="delete"),
]
