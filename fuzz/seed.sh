#!/usr/bin/env bash
# Seeds each fuzz target's corpus with the files of seeds/<target>/ (the issues' examples,
# control header included: tests/fuzz_seeds.rs holds their outcomes) and with the files of
# ../shared/testdata behind a control header (see fuzz_targets/common.rs): one zero header,
# and one asking for 4 KiB destinations and 7-byte fragments.
set -euo pipefail
cd "$(dirname "$0")"
for t in decompress round_trip range lz4; do
    mkdir -p "corpus/$t"
    cp seeds/"$t"/* "corpus/$t/"
done
data=../../shared/testdata
[ -d "$data" ] || { echo "no $data: seeded from seeds/ only" >&2; exit 0; }
for t in decompress round_trip range lz4; do
    mkdir -p "corpus/$t"
    i=0
    find "$data" -type f ! -name '*.md' ! -name '*.tsv' | sort | while read -r f; do
        i=$((i + 1))
        { printf '\0\0\0\0\0\0\0\0'; head -c 262144 "$f"; } > "corpus/$t/seed-$i"
        { printf '\0\0\2\1\2\3\4\2'; head -c 262144 "$f"; } > "corpus/$t/seed-$i-4k"
    done
done
echo "seeded: $(ls corpus/decompress | wc -l) inputs per target"
