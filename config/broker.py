"""The embedded default's broker: kombu's file-system transport, made safe for two processes.

kombu writes a message file in place while a reader moves files out of the folder without a
lock, so a worker can take a half-written file and fail to decode it (the message is lost).
Here a message is written beside the folder's names and renamed into place, which is atomic on
one file system: a reader sees a whole file or none.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):  # noqa: ANN001 (kombu's signature)
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # A leading dot and a trailing suffix: readers match "<anything>.<queue>.msg" only.
        temporary = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(temporary, "wb", buffering=0) as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(temporary, final)
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
