"""The embedded broker (CELERY_BROKER_URL=filesystem://): kombu's filesystem transport, with every message
written aside and renamed into the queue folder.

kombu writes a message file in place, and its consumer neither waits for nor checks the writer's lock: a
worker that lists the folder while a run sends its units (a thousand files in a row) can take a file that
is still empty, fail to decode it, and stop with "Unrecoverable error: JSONDecodeError". A rename is atomic,
so the consumer only ever sees whole messages.
"""

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # The consumer takes only names ending in ".<queue>.msg"; this one does not until the rename.
        partial = os.path.join(self.data_folder_out, f".{name}.partial")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            try:
                os.unlink(partial)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
