"""Prints one line per record of a --autotune-record JSON-lines file: the group, the device
id, the winner, the verdict and each candidate's median or error. Never raises."""

import json
import statistics
import sys


def main(path):
    try:
        lines = open(path).read().splitlines()
    except OSError as error:
        print(f"(no records: {error})")
        return
    print(f"{len(lines)} record(s) in {path}")
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            print(f"  unreadable line: {line[:200]}")
            continue
        extra = r.get("extra") or {}
        parts = []
        for res in r.get("results") or []:
            samples = res.get("samples_ns")
            if samples:
                parts.append(
                    f"{res.get('name')}={statistics.median(samples) / 1e3:.1f}us(n={len(samples)})"
                )
            else:
                error = res.get("error")
                if isinstance(error, dict):
                    error = error.get("message") or error.get("kind")
                message = str(error or res.get("message") or "?")
                parts.append(
                    f"{res.get('name')}=ERROR[{message.splitlines()[0][:100] if message else ''}]"
                )
        device = extra.get("device") or {}
        gpu = (device.get("fingerprint") or {}).get("uuid") if isinstance(device, dict) else None
        print(
            f"  {extra.get('group')}: device_id={r.get('device_id')} gpu={gpu} winner={r.get('fastest_name')}"
            f" verdict={extra.get('verdict')} failed={extra.get('failed')}"
        )
        if extra.get("message"):
            print(f"      message: {str(extra.get('message'))[:300]}")
        print(f"      candidates: {', '.join(parts)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "records.jsonl")
