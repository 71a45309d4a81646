"""Exit 0 when the PostgreSQL and Redis servers named by the two URLs accept connections."""

import socket
import sys
from urllib.parse import urlsplit


def reachable(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or default_port), 2
        ):
            return True
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(0 if reachable(sys.argv[1], 5432) and reachable(sys.argv[2], 6379) else 1)
