"""tools/call round trip as a Python client sees it (the pure-Lua plugins were measured this way).
Usage: roundtrip.py PORT TOKEN N [AUTH_HEADER]  -> prints {"p50": ms, "p99": ms}
(AUTH_HEADER: x-pi-ide-authorization unless given; claudecode.nvim takes x-claude-code-ide-authorization)"""
import json
import sys
import time

from websockets.sync.client import connect


def main():
    port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    header = sys.argv[4] if len(sys.argv) > 4 else "x-pi-ide-authorization"
    with connect(f"ws://127.0.0.1:{port}/", additional_headers={header: token},
                 compression=None, max_size=None) as ws:
        ws.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                            "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                                       "clientInfo": {"name": "bench-py", "version": "0"}}}))
        ws.recv()
        call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "getDiagnostics", "arguments": {}}}
        times = []
        for i in range(100 + n):
            call["id"] = i
            t = time.perf_counter()
            ws.send(json.dumps(call))
            reply = json.loads(ws.recv())
            dt = (time.perf_counter() - t) * 1e3
            assert reply["id"] == i and "result" in reply, reply
            if i >= 100:
                times.append(dt)
        times.sort()
        pick = lambda p: times[round((len(times) - 1) * p)]
        print(json.dumps({"p50": pick(0.5), "p99": pick(0.99)}))


main()
