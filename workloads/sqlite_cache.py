# A database's page cache: an SQLite database of orders (customers, cities, amounts, dates,
# free-text notes) with two indexes, its pages held in SQLite's own page cache (a few
# hundred MB of the process's heap), warmed by a full scan and indexed look-ups.
# Prints "ready PID" and sleeps ten minutes, as ../shared/workloads/python_heap.py does.
import os, random, sqlite3, sys, tempfile, time

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_500_000
rng = random.Random(7)
words = open(os.path.join(os.path.dirname(os.__file__), 'this.py')).read().split()
words = [w.strip('.,;:"\'()') or 'x' for w in words] + ['order', 'shipped', 'refund', 'gift', 'express', 'fragile']
first = ['anna', 'ben', 'chen', 'dmitri', 'eva', 'farid', 'grace', 'hiro', 'ines', 'jon', 'kofi', 'lena']
last = ['smith', 'garcia', 'muller', 'rossi', 'tanaka', 'nowak', 'silva', 'kim', 'dubois', 'olsen']
cities = ['berlin', 'lagos', 'lima', 'osaka', 'porto', 'quebec', 'seoul', 'tunis', 'utrecht', 'vienna']
status = ['new', 'paid', 'shipped', 'delivered', 'returned']

fd, path = tempfile.mkstemp(suffix='.db')
os.close(fd)
db = sqlite3.connect(path)
db.execute('PRAGMA cache_size = -600000')    # 600 MB of page cache: the whole database
db.execute('PRAGMA journal_mode = OFF')
db.execute('PRAGMA synchronous = OFF')
db.execute('''CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, email TEXT,
              city TEXT, amount REAL, created TEXT, status TEXT, note TEXT)''')
def row(i):
    f, l = rng.choice(first), rng.choice(last)
    return (i, f'{f} {l}', f'{f}.{l}{rng.randrange(1000)}@example.com', rng.choice(cities),
            round(rng.lognormvariate(3, 1), 2),
            f'2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}',
            rng.choice(status), ' '.join(rng.choice(words) for _ in range(rng.randrange(4, 16))))
for start in range(0, rows, 50_000):
    db.executemany('INSERT INTO orders VALUES (?,?,?,?,?,?,?,?)',
                   (row(i) for i in range(start, min(rows, start + 50_000))))
db.execute('CREATE INDEX by_customer ON orders (customer, created)')
db.execute('CREATE INDEX by_city ON orders (city, amount)')
db.commit()
# Warm the cache: a full scan, and look-ups through both indexes.
db.execute('SELECT count(*), sum(amount), max(length(note)) FROM orders').fetchall()
for c in cities:
    db.execute('SELECT count(*) FROM orders WHERE city = ? AND amount > 20', (c,)).fetchall()
for f in first:
    db.execute("SELECT count(*) FROM orders WHERE customer >= ? AND customer < ? || 'z'", (f, f)).fetchall()
os.unlink(path)    # the cache holds the pages; the file is not needed again
print('ready', os.getpid(), flush=True)
time.sleep(600)
