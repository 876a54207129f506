"""Runs PyTorch's fr_trace exactly as `python3 -m torch.distributed.flight_recorder.fr_trace DIR` does, and says on
stderr how far its matching got: how many entries it had to match after lining the ranks' rings up, how many it
consumed (matched, or set aside as a mismatch) before it stopped, and whether it gave up (it stops after too many
mismatches in one process group). The count costs one pass over the lists' lengths."""
import sys

from torch.distributed.flight_recorder import fr_trace
from torch.distributed.flight_recorder.components import builder

_build_collectives = builder.build_collectives


def _counted(all_entries, *args, **kwargs):
    total = sum(len(entries) for entries in all_entries.values())
    result = _build_collectives(all_entries, *args, **kwargs)
    left = sum(len(entries) for entries in all_entries.values())
    collectives = result[1]
    passed = sum(1 for c in collectives if c.pass_check)
    print(f"fr_trace-bench: entries={total} consumed={total - left} left={left} "
          f"collectives={len(collectives)} passed={passed}", file=sys.stderr, flush=True)
    return result


builder.build_collectives = _counted
fr_trace.main(sys.argv[1:])
