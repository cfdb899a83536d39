"""A client for skillgate's framed JSON-RPC transport, standard library only.

Quick start::

    import asyncio
    import skillgate

    async def main() -> None:
        async with skillgate.Client("127.0.0.1", 7400, token="...") as gw:
            print(await gw.list_skills(detail="summary"))
            run = await gw.run_code("def main(args):\\n    return args['x'] * 2\\n", args={"x": 21})
            print(run["output"])

    asyncio.run(main())
"""

import logging

from ._version import __version__
from .client import PROTOCOL_VERSION, Client, Reconnect
from .connection import Connection, ConnectionOptions
from .errors import (
    ConnectionClosedError,
    ErrorInfo,
    FrameTooLargeError,
    KeepaliveTimeoutError,
    ProtocolError,
    Retry,
    RpcError,
    SkillgateError,
    TransferError,
)
from .methods import blob_bytes
from .transfer import PIECE_BYTES, ProgressCallback
from .types import (
    BlobContent,
    BlobInfo,
    DescribeSkillResult,
    GuideResult,
    InitializeResult,
    ListRunsResult,
    ListSkillsResult,
    RunEvent,
    RunRef,
    RunResult,
    RunSummary,
    SkillEntry,
    SkillFile,
    UploadInfo,
    UploadProgress,
)

# A library leaves log output to the application: without a configured
# handler, the "skillgate" logger stays silent instead of printing warnings.
logging.getLogger("skillgate").addHandler(logging.NullHandler())

__all__ = [
    "__version__",
    "PROTOCOL_VERSION",
    "Client",
    "Reconnect",
    "Connection",
    "ConnectionOptions",
    "SkillgateError",
    "RpcError",
    "ConnectionClosedError",
    "KeepaliveTimeoutError",
    "ProtocolError",
    "FrameTooLargeError",
    "TransferError",
    "ErrorInfo",
    "Retry",
    "blob_bytes",
    "PIECE_BYTES",
    "ProgressCallback",
    "BlobContent",
    "BlobInfo",
    "DescribeSkillResult",
    "GuideResult",
    "InitializeResult",
    "ListRunsResult",
    "ListSkillsResult",
    "RunEvent",
    "RunRef",
    "RunResult",
    "RunSummary",
    "SkillEntry",
    "SkillFile",
    "UploadInfo",
    "UploadProgress",
]
