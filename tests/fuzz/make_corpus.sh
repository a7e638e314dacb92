#!/usr/bin/env bash
# make_corpus.sh — regenerates the seed corpora in tests/fuzz/corpus/ from real inputs
# (run it when a file format changes; the fuzzers read the seeds, never write them):
#   bash tests/fuzz/make_corpus.sh [FOXHUNT_BINARY]    (default build/foxhunt)
# csv: the first bars of ../shared/data's files and small variants (descending, CRLF with a
# byte-order mark, a kline file); safetensors: a `foxhunt collect` file and a stripped
# checkpoint; checkpoint: checkpoints of a tiny run with the network tensors removed
# (the harness supplies networks; see fuzz_checkpoint.c); ini: configs/*.ini and an INI
# setting every key to a resolved config's value; batch: `foxhunt collect` files (synthetic
# and CSV data, three sizes); gemm_cache: algorithm files of a few random entries (one
# with a shape twice, one empty); rendezvous: id files of worlds 2 and 4, an arrival line
# and an abort message.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${1:-$ROOT/build/foxhunt}
DATA=$ROOT/../shared/data
C=$ROOT/tests/fuzz/corpus
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$C"/{csv,safetensors,checkpoint,ini,gemm_cache,batch,rendezvous}

# ---- csv ----
head -n 321 "$DATA/spy_daily.csv" >"$C/csv/spy_daily_320.csv"
head -n 13 "$DATA/spy_daily.csv" >"$C/csv/spy_daily_12.csv"
head -n 321 "$DATA/btcusdt_1h.csv" >"$C/csv/btcusdt_1h_320.csv"
{ head -n 1 "$DATA/spy_daily.csv"; sed -n '2,11p' "$DATA/spy_daily.csv" | tac; } >"$C/csv/descending_10.csv"
{ printf '\xef\xbb\xbf'; head -n 9 "$DATA/btcusdt_1h.csv" | sed 's/$/\r/'; } >"$C/csv/bom_crlf_8.csv"
# headerless exchange klines (Binance's bulk files, issue 32): open time in ms, then in us
kline() { # $1: the time's extra zeros
  sed -n '2,321p' "$DATA/btcusdt_1h.csv" | while IFS=, read -r t o h l c v; do
    s=$(date -u -d "$t" +%s)
    echo "${s}000$1,$o,$h,$l,$c,$v,$((s + 3599))999$1,0,100,0,0,0"
  done
}
kline "" >"$C/csv/kline_headerless_ms_320.csv"
kline "000" | head -n 12 >"$C/csv/kline_headerless_us_12.csv"

# ---- a tiny run: its checkpoints, config and a collection ----
"$BIN" train --device cpu --episodes 4 --steps 16 --epochs 1 --minibatch 32 \
  --synthetic-bars 1000 --threads 1 --horizon 10 --iterations 2 --checkpoint-every 1 \
  --eval-at-end 0 --out "$TMP/run" >/dev/null
"$BIN" collect --device cpu --episodes 2 --steps 4 --out "$TMP/collect.safetensors" >/dev/null

python3 - "$TMP" "$C" "$ROOT" <<'PY'
import json, struct, sys, os
tmp, c, root = sys.argv[1:]

def read(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        return header, f.read()

def write(path, header, buffer):
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + buffer)

NETWORK = ('policy_', 'value_', 'fc1.', 'fc2.', 'adam.')
def strip(src, dst):
    header, buf = read(src)
    out, parts, off = {}, [], 0
    for k, v in header.items():
        if k == '__metadata__':
            out[k] = v
            continue
        if k.startswith(NETWORK):
            continue
        b, e = v['data_offsets']
        parts.append(buf[b:e])
        out[k] = dict(v, data_offsets=[off, off + e - b])
        off += e - b
    write(dst, out, b''.join(parts))

strip(f'{tmp}/run/checkpoint_000001.safetensors', f'{c}/checkpoint/tiny_iteration1.safetensors')
strip(f'{tmp}/run/final.safetensors', f'{c}/checkpoint/tiny_final.safetensors')
strip(f'{tmp}/run/final.safetensors', f'{c}/safetensors/checkpoint_stripped.safetensors')
os.replace(f'{tmp}/collect.safetensors', f'{c}/safetensors/collect_2x4.safetensors')

# a file of every dtype, a scalar, an empty tensor and metadata
import array
tensors = [('f32', 'F32', [2, 2], array.array('f', [1, -2, 3.5, 0]).tobytes()),
           ('f64', 'F64', [3], array.array('d', [1e300, -0.0, 2]).tobytes()),
           ('i32', 'I32', [], array.array('i', [-7]).tobytes()),
           ('i64', 'I64', [1, 2], array.array('q', [1, -1]).tobytes()),
           ('u64', 'U64', [2], array.array('Q', [2**64 - 1, 0]).tobytes()),
           ('u8', 'U8', [3], bytes([0, 128, 255])),
           ('empty', 'F32', [0, 4], b'')]
header, parts, off = {'__metadata__': {'format': 'example', 'note': 'caf\u00e9'}}, [], 0
for name, dt, shape, data in tensors:
    header[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [off, off + len(data)]}
    parts.append(data)
    off += len(data)
write(f'{c}/safetensors/every_dtype.safetensors', header, b''.join(parts))

# an INI with every key, from the run's resolved config
cfg = json.load(open(f'{tmp}/run/config.json'))
with open(f'{c}/ini/every_key.ini', 'w') as f:
    for section, fields in cfg.items():
        f.write(f'[{section}]\n')
        for k, v in fields.items():
            if k in ('out', 'resume'):
                continue
            f.write(f'{k} = {v}\n')
PY
cp "$ROOT"/configs/*.ini "$C/ini/"

# ---- batch: `foxhunt update --batch` files (data.source relative: run from ROOT) ----
(cd "$ROOT" &&
 "$BIN" collect --device cpu --episodes 2 --steps 4 --out "$C/batch/synthetic_2x4.safetensors" &&
 "$BIN" collect --device cpu --episodes 3 --steps 5 --seed 7 --data ../shared/data/spy_daily.csv \
   --out "$C/batch/spy_3x5.safetensors" &&
 "$BIN" collect --device cpu --episodes 1 --steps 1 --seed 3 --out "$C/batch/synthetic_1x1.safetensors") >/dev/null

# ---- gemm_cache and rendezvous: written here (gemm_cache.c's and rendezvous.c's layouts) ----
python3 - "$C" <<'PY'
import random, struct, sys
c = sys.argv[1]
def fnv1a(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return h

rng = random.Random(32)
def entry(n_in):
    # n_in, n_out, relu, bias, tf32 (int32), rows (int64), three alignments (uint32)
    rec = struct.pack('<5iq3I', n_in, rng.choice([1, 45, 128, 256]), rng.randint(0, 1),
                      rng.randint(0, 1), rng.randint(0, 1), rng.getrandbits(20) + 1,
                      *[1 << rng.randint(2, 8) for _ in range(3)])
    return rec + bytes(rng.getrandbits(8) for _ in range(64))
def gemm(path, records):
    body = b''.join(records)
    with open(path, 'wb') as f:
        f.write(b'FHGEMMC\0' + struct.pack('<IIQ', 1, len(records), fnv1a(body)) + body)
gemm(f'{c}/gemm_cache/four.bin', [entry(n) for n in (54, 256, 128, 64)])
one = entry(54)
gemm(f'{c}/gemm_cache/shape_twice.bin', [one, entry(256), one[:40] + bytes(64)])
gemm(f'{c}/gemm_cache/empty.bin', [])

def rdv(path, world, n_id):
    ident = bytes(rng.getrandbits(8) for _ in range(n_id))
    head = b'FHNCCLID' + struct.pack('<4I', 1, world, n_id, 0) + ident
    with open(path, 'wb') as f:
        f.write(head + struct.pack('<Q', fnv1a(head)))
rdv(f'{c}/rendezvous/world2.id', 2, 128)
rdv(f'{c}/rendezvous/world4.id', 4, 128)
with open(f'{c}/rendezvous/arrival.rank', 'wb') as f:
    f.write(b'0123456789abcdef\n')
with open(f'{c}/rendezvous/abort.txt', 'wb') as f:
    f.write(b'rank 1: NCCL reported an error between the ranks: unhandled system error')
PY
printf 'episodes = 8\n; a comment\n[ppo]\nlr: 0.001\n\n[env]\nhorizon=40  # inline\n' >"$C/ini/no_section_key.ini"
ls -l "$C"/*
