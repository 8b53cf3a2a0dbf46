# SPDX-License-Identifier: MIT
# Types of the C half (python/src/): see its docstrings.
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

PURE_VERSION: str
MAX_CHANNELS: int
URGENCY_MAX: int
DATAGRAM_QUEUE: int
EINVAL: int
ENOMEM: int
EAGAIN: int
ECRYPTO: int
EPROTO: int
ECLOSED: int
ETIMEDOUT: int
EUNREACH: int
ENOTPURE: int
EMOVED: int
EVERSION: int
EREFUSED: int
EACCES: int
EKEY: int
EMSGSIZE: int
ENOBUFS: int
ELIMIT: int
ESTATE: int
EFLOW: int
EIO: int
ERESET: int

def keygen() -> bytes: ...
def public_key(private_key: bytes) -> bytes: ...
def strerror(code: int) -> str: ...
def now() -> float: ...
def _set_errors(base: type, classes: Dict[Union[int, str], type]) -> None: ...

class Link:
    open: bool
    accepted: int
    established: int
    peer_finished: int
    closed: int
    close_error: int
    peer_code: int
    first_unacked: int
    next_id: int
    reason: Optional[str]
    service: Optional[str]
    peer_key: Optional[bytes]
    queued: int
    backlog: int
    in_flight: int
    peer_addr: Optional[str]
    owner: Any
    max_channel: int
    local_max_channels: int
    datagram_max: int
    chan_unacked: Optional[Dict[int, Tuple[int, int]]]
    def send(self, msg: Union[bytes, bytearray, memoryview]) -> Optional[int]: ...
    def send_on(self, channel: int, msg: Union[bytes, bytearray, memoryview]) -> Optional[int]: ...
    def pop(self) -> Optional[bytes]: ...
    def pop_on(self, channel: int) -> Optional[bytes]: ...
    def pop_any(self) -> Optional[Tuple[int, bytes]]: ...
    def send_datagram(self, data: Union[bytes, bytearray, memoryview]) -> None: ...
    def pop_datagram(self) -> Optional[bytes]: ...
    def set_priority(self, channel: int, urgency: int, incremental: bool) -> None: ...
    def unacked(self, channel: int) -> Tuple[int, int]: ...
    def channels_unacked(self) -> int: ...
    def close(self, code: int = ..., reason: str = ...) -> bool: ...
    def abort(self, code: int = ..., reason: str = ...) -> bool: ...
    def finish(self) -> None: ...
    def stats(self) -> Dict[str, int]: ...

class Context:
    port: int
    address: str
    public_key: Optional[bytes]
    blocked: bool
    closed: bool
    def __init__(self, private_key: bytes, bind: str, *, services: Iterable[str] = ...,
                 allow: Iterable[bytes] = ..., allow_any: bool = ...,
                 notify: Optional[Callable[[], Any]] = ..., max_queue: int = ...,
                 handshake_timeout: float = ..., idle_timeout: float = ..., keepalive: float = ...,
                 max_message_size: int = ..., send_backlog: int = ..., send_queue: int = ...,
                 respond_to_unknown: bool = ..., max_channels: int = ...,
                 max_datagram_size: int = ..., datagram_queue: int = ...) -> None: ...
    def on_readable(self) -> Optional[List[Link]]: ...
    def service(self) -> Optional[List[Link]]: ...
    def deadline(self) -> Optional[float]: ...
    def fileno(self) -> int: ...
    def connect(self, address: str, server_key: bytes, service: str) -> Link: ...
    def close(self) -> Optional[List[Link]]: ...
    def drain(self) -> Optional[List[Link]]: ...
    def stats(self) -> Dict[str, int]: ...
