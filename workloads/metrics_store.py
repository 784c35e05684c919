# A monitoring agent's in-memory store: numeric arrays and serialised records, pages that
# compress only about 1.3x. Time series held as Prometheus's head block holds them, in
# chunks of 120 samples a series (array('q') timestamps in ms, array('d') values: noisy
# gauges, counters, ratios), beside batches of struct-packed event records (ids, times,
# hosts, latencies) and zlib-compressed chunks of older samples; allocated as they arrive,
# so that the heap interleaves them. Deterministic (seeded).
# Prints "ready PID" and sleeps ten minutes, as ../shared/workloads/python_heap.py does;
# an argument sets the size of the data held in MiB (default 300).
import os, random, struct, sys, time, zlib
from array import array

mb = int(sys.argv[1]) if len(sys.argv) > 1 else 300
rng = random.Random(41)
SAMPLES = 120                      # samples a chunk, as Prometheus cuts them
SERIES = 2000
START = 1_764_547_200_000          # 2025-12-01T00:00:00Z in ms
INTERVAL = 15_000                  # scrape interval, ms

kinds = [rng.choice('ggggggcr') for _ in range(SERIES)]   # gauge, counter, ratio
level = [rng.lognormvariate(3, 2) for _ in range(SERIES)]
count = [float(rng.randrange(1 << 20)) for _ in range(SERIES)]
t0 = [START + rng.randrange(INTERVAL) for _ in range(SERIES)]

def chunk(s, n):
    """The next chunk of series s, its n-th: timestamps and values."""
    base = t0[s] + n * SAMPLES * INTERVAL
    ts = array('q', [base + i * INTERVAL + rng.randrange(-40, 40) for i in range(SAMPLES)])
    k, g = kinds[s], rng.gauss
    if k == 'g':       # a gauge: a level with noise, full precision
        lv = level[s]
        vs = array('d', [lv * (1 + 0.05 * g(0, 1)) for _ in range(SAMPLES)])
    elif k == 'c':     # a counter: integral, growing by small steps
        c, out = count[s], []
        for _ in range(SAMPLES):
            c += rng.randrange(0, 50)
            out.append(c)
        count[s] = c
        vs = array('d', out)
    else:              # a ratio in [0, 1)
        vs = array('d', [rng.random() for _ in range(SAMPLES)])
    return ts, vs

hosts = [f'host-{i:04d}.dc{i % 7}'.encode() for i in range(300)]
paths = [p.encode() for p in ('/api/v1/query', '/api/v1/write', '/metrics', '/health',
                              '/api/v1/series', '/api/v1/labels', '/federate')]
RECORD = struct.Struct('<QqHHIdd16s')   # id, time (µs), host, status, bytes, latency, cpu, path
event_id = 1 << 40

def events(n, now_ms):
    """A batch of n serialised event records."""
    global event_id
    out = bytearray()
    for _ in range(n):
        event_id += rng.randrange(1, 4)
        out += RECORD.pack(event_id, now_ms * 1000 + rng.randrange(15_000_000),
                           rng.randrange(len(hosts)), rng.choice((200, 200, 200, 204, 404, 500)),
                           rng.randrange(1 << 20), rng.expovariate(20.0), rng.random(),
                           rng.choice(paths))
    return bytes(out)

store = [[] for _ in range(SERIES)]   # series -> chunks (timestamps, values)
log = []                              # batches of event records
cold = []                             # older chunks, compressed
target = mb << 20
held, n = 0, 0
while held < target:
    for s in range(SERIES):
        ts, vs = chunk(s, n)
        store[s].append((ts, vs))
        held += 2 * 8 * SAMPLES
        if s % 8 == 0:
            batch = events(24, t0[s] + n * SAMPLES * INTERVAL)
            log.append(batch)
            held += len(batch)
        if s % 8 == 4 and n > 0:
            old_ts, old_vs = store[s][n - 1]
            z = zlib.compress(old_ts.tobytes() + old_vs.tobytes(), 6)
            cold.append(z)
            held += len(z)
    n += 1
print('ready', os.getpid(), flush=True)
time.sleep(600)
