"""`up`: the whole app on one machine: migrations, demo data, the demo judge, a worker and the web."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command

from judgeapp.judging import shutdown
from judgeapp.judging.audit import cli_actor
from judgeapp.judging.cli import JudgeCommand
from judgeapp.judging.errors import InputError
from judgeapp.judging.judges import judges_sync


# up: Start judgeapp on this machine: database, demo data, the scripted demo judge, a worker and the web app.
def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _wait_for_port(host: str, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0:
                return True
        time.sleep(0.1)
    return False


def web_environment() -> dict[str, str]:
    """The web app's environment: DEBUG off unless DJANGO_DEBUG says otherwise, so a missing page is the site's
    404 (DEBUG's lists every URL pattern) and an error the site's 500, not a traceback."""
    environment = dict(os.environ)
    environment.setdefault("DJANGO_DEBUG", "0")
    return environment


class UpCommand(JudgeCommand):
    ends_at_once = False  # it stops its child processes on the way out
    help = (
        "Start everything a laptop needs: migrate, load the demo, start the scripted demo judge, a real "
        "background worker and the web app. Ctrl-C stops them all."
    )
    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="address of the web app (default 127.0.0.1)")
        parser.add_argument(
            "--port", type=int, default=int(os.environ.get("PORT", 8000)), help="port of the web app (default 8000)"
        )
        parser.add_argument("--no-demo", action="store_true", help="do not start the demo judge or load demo data")
        parser.add_argument(
            "--demo-judge-port", type=int, default=settings.DEMO_JUDGE_PORT, help="port of the scripted demo judge"
        )
        parser.add_argument("--concurrency", type=int, default=settings.WORKER_CONCURRENCY, help="worker processes")

    def handle(self, *args, **options):
        host, port = options["host"], options["port"]
        demo = not options["no_demo"]
        if demo and settings.PRODUCTION:
            raise InputError("the demo (with its well-known demo passwords) is for development; pass --no-demo in production")
        if not _port_free(host, port):
            raise InputError(f"port {port} on {host} is in use; pass --port to choose another")
        if demo and not _port_free("127.0.0.1", options["demo_judge_port"]):
            raise InputError(f"port {options['demo_judge_port']} for the demo judge is in use; pass --demo-judge-port")

        Path(settings.DATA_DIR).mkdir(parents=True, exist_ok=True)
        self.stdout.write("Migrating the database…")
        call_command("migrate", interactive=False, verbosity=0)
        judges_sync(actor=cli_actor())
        shutdown.raise_if_requested()

        python = sys.executable
        root = str(settings.BASE_DIR)
        children: list[tuple[str, subprocess.Popen]] = []

        def spawn(name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
            children.append((name, subprocess.Popen(argv, cwd=root, start_new_session=True, env=env)))

        def stop_all():
            # SIGTERM to each child's own process, not its group: the worker then stops its pool itself (warm
            # shutdown, within a second or two); its pool processes killed under it, it waited out the 20 s.
            for _name, child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 20
            for _name, child in children:
                try:
                    child.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)

        try:
            if demo:
                from judgeapp.demo import DEMO_JUDGE_OPTIONS, demo_load

                judge_port = options["demo_judge_port"]
                spawn("demo judge", [python, "-m", "fakejudge", "--port", str(judge_port), *DEMO_JUDGE_OPTIONS])
                if not _wait_for_port("127.0.0.1", judge_port, 15):
                    raise InputError("the scripted demo judge did not start")

                self.stdout.write("Loading the demo (judged by the scripted demo server, not a language model)…")
                demo_load(judge_url=f"http://127.0.0.1:{judge_port}/v1", log=lambda line: self.stdout.write(f"  {line}"))
                shutdown.raise_if_requested()
            spawn(
                "worker",
                [python, "-m", "celery", "-A", "judgeapp", "--quiet", "worker", "--pool", "prefork",
                 "--concurrency", str(options["concurrency"]), "--loglevel", "WARNING"],
            )
            spawn("web", [python, "manage.py", "runserver", "--noreload", f"{host}:{port}"], env=web_environment())
            if not _wait_for_port(host, port, 30):
                raise InputError("the web app did not start")
            self.stdout.write(self.style.SUCCESS(f"\njudgeapp is running at http://{host}:{port}/  (Ctrl-C stops it)"))
            self.stdout.write(
                f"broker: {settings.CELERY_BROKER_URL.split('@')[-1]}  database: "
                f"{settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
            )
            # Until a signal asks to stop (the handler only sets the flag; see judgeapp/judging/shutdown.py).
            while shutdown.requested() is None:
                for name, child in children:
                    if child.poll() is not None:
                        raise InputError(f"the {name} stopped (exit {child.returncode}); stopping the rest")
                time.sleep(0.5)
            shutdown.raise_if_requested()
        finally:
            stop_all()
