"""Issue 28: a judge's identity is its base URL and model spelled one way (judgeapp/models/identity.py)."""

import pytest

from judgeapp.models.identity import OPENAI_DEFAULT_BASE_URL, base_url_normalise, identity_normalise, model_normalise

LOCAL = "http://localhost:8080/v1"


@pytest.mark.parametrize("spelling", [
    "http://localhost:8080/v1",
    "http://127.0.0.1:8080/v1",
    "http://127.0.0.1:8080/v1/",
    "http://127.0.0.1:8080/v1///",
    "HTTP://LocalHost:8080/v1",
    "http://localhost.:8080/v1",
    "http://[::1]:8080/v1",
    "http://[0:0:0:0:0:0:0:1]:8080/v1",
    "http://[::ffff:127.0.0.1]:8080/v1",
    "http://0.0.0.0:8080/v1",
    "http://[::]:8080/v1",
    "  http://127.0.0.1:8080/v1  ",
    "127.0.0.1:8080/v1",
    "http://user:secret@127.0.0.1:8080/v1",
    "http://127.0.0.1:8080/v1#part",
])
def test_every_spelling_of_this_machine_is_one_base_url(spelling):
    assert base_url_normalise(spelling) == LOCAL


@pytest.mark.parametrize("spelling, expected", [
    ("http://localhost:80/v1", "http://localhost/v1"),
    ("http://localhost/v1", "http://localhost/v1"),
    ("https://API.example.com:443/v1/", "https://api.example.com/v1"),
    ("https://api.example.com/v1", "https://api.example.com/v1"),
    ("https://api.example.com:80/v1", "https://api.example.com:80/v1"),  # 80 is not https's default
    ("http://api.example.com:443/v1", "http://api.example.com:443/v1"),
    ("", OPENAI_DEFAULT_BASE_URL),
    ("   ", OPENAI_DEFAULT_BASE_URL),
    ("https://api.openai.com/v1/", OPENAI_DEFAULT_BASE_URL),
    ("http://[2001:DB8::0001]:8000/v1", "http://[2001:db8::1]:8000/v1"),
    ("https://host.example/openai/deployments/x?api-version=2024-06-01", "https://host.example/openai/deployments/x?api-version=2024-06-01"),
])
def test_scheme_host_and_default_ports_are_spelled_one_way(spelling, expected):
    assert base_url_normalise(spelling) == expected


@pytest.mark.parametrize("one, other", [
    ("http://localhost:8080/V1", "http://localhost:8080/v1"),  # the path is case-sensitive
    ("http://127.0.0.2:8080/v1", "http://127.0.0.1:8080/v1"),  # another loopback address can be another server
    ("http://localhost:8081/v1", "http://localhost:8080/v1"),
    ("https://localhost:8080/v1", "http://localhost:8080/v1"),
    ("http://localhost:8080/v1?x=A", "http://localhost:8080/v1?x=a"),
    ("http://localhost:8080", "http://localhost:8080/v1"),
])
def test_what_can_name_another_server_stays_apart(one, other):
    assert base_url_normalise(one) != base_url_normalise(other)


def test_a_port_that_is_not_a_number_is_compared_as_written_not_a_traceback():
    assert base_url_normalise("http://LOCALHOST:abc/v1/") == "http://localhost:abc/v1"
    assert base_url_normalise("http://[::1/v1") == "http://[::1/v1"


def test_the_model_name_is_case_insensitive():
    assert model_normalise(" SmolLM2 ") == model_normalise("smollm2") == "smollm2"
    assert model_normalise("smollm2:1.7b") != model_normalise("smollm2:360m")


def test_one_model_under_two_spellings_is_one_identity():
    assert identity_normalise("http://127.0.0.1:8080/v1/", "SmolLM2") == identity_normalise("http://localhost:8080/v1", "smollm2")
    assert identity_normalise("http://127.0.0.1:8080/v1", "SmolLM2") != identity_normalise("http://127.0.0.1:8081/v1", "SmolLM2")
