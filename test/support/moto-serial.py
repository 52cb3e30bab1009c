"""moto's S3 server, answering one request at a time.

moto checks a conditional write (If-None-Match, If-Match) and then stores the object, with no
lock between the two: two writers racing on one key can both succeed, which real S3 never
allows. Serialising the requests makes every conditional write atomic, as S3's are, so the
compare-and-set tests prove the store rather than moto's timing. Connections are still served on
threads; only the application call is exclusive. Usage: python moto-serial.py -H HOST -p PORT
"""
import sys
import threading

import moto.server as server
from moto.moto_server.werkzeug_app import DomainDispatcherApplication

_lock = threading.Lock()
_call = DomainDispatcherApplication.__call__


def _serial(self, environ, start_response):
    with _lock:
        # The body is produced inside the lock too: moto builds it before returning.
        return list(_call(self, environ, start_response))


DomainDispatcherApplication.__call__ = _serial

if __name__ == "__main__":
    server.main(sys.argv[1:])
