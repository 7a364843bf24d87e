"""The embedded broker: kombu's filesystem transport, with a message written whole before it appears.

kombu writes a message file in place: it is created empty, then written. A worker polling the folder can
move and read it in between, get an empty message and stop with "Unrecoverable error: JSONDecodeError"
(seen when a run dispatches many units while a worker is consuming). Here a message is written under a
name no consumer matches, then renamed into place; a rename within a folder is atomic.
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
        # A leading dot: the consumer matches "<anything>.<queue>.msg" after the first dot only.
        partial = os.path.join(self.data_folder_out, f".{name}.partial")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
