#!/usr/bin/env bash
# rsmpi's examples on o2g's `mpi` crate (docs/rsmpi.md): fetches rsmpi's
# published package with cargo, applies examples/rsmpi/o2g.patch to the
# examples used, builds them as the cargo project examples/rsmpi describes
# (outside the workspace, --locked: its Cargo.lock is committed) under
# target/rsmpi-examples, builds o2grun, then runs each example under
# `o2grun -n N --timeout 60` over every host transport: sockets-select,
# sockets-epoll and the emulated NICs dimmnet and hyphenlink (both in a
# /dev/shm region, their default). A run passes when o2grun exits 0 (every
# rank did: the examples check their results with assert!) and, for the
# examples that print their results, every line expected appears in the
# output. Prints one line per (example, transport), the output of a run
# that failed, and a final "rsmpi-examples: N passed, M failed"; exits
# non-zero if any run failed.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$O2G_ROOT"

project=examples/rsmpi
target="$O2G_ROOT/target/rsmpi-examples"
o2grun="$O2G_ROOT/target/release/o2grun"
transports=(sockets-select sockets-epoll dimmnet hyphenlink)
# The fixed set, with the number of ranks each runs on (3 for some, so that
# the collectives also meet a size that is not a power of two).
examples=(
    "simple 4"
    "readme 3"
    "send_receive 4"
    "barrier 4"
    "immediate_barrier 3"
    "wait_any 4"
    "broadcast 4"
    "all_to_all 3"
    "scan 4"
    "all_gather_varcount 3"
    "group 4"
    "split 3"
)

cargo build --release --locked --quiet -p mpi --bin o2grun ||
    die "building o2grun failed"

# rsmpi's published package, fetched by cargo (its registry cache keeps
# it): a scratch manifest that depends on exactly that version.
rsmpi_version=0.8.2
fetch="$target/fetch"
mkdir -p "$fetch/src"
printf '[package]\nname = "o2g-rsmpi-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nmpi = "=%s"\n[workspace]\n' \
    "$rsmpi_version" >"$fetch/Cargo.toml"
: >"$fetch/src/lib.rs"
cargo fetch --quiet --manifest-path "$fetch/Cargo.toml" || die "cargo could not fetch rsmpi $rsmpi_version"
crate="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"mpi-$rsmpi_version.crate" 2>/dev/null | head -1)"
[[ -f "$crate" ]] || die "no mpi-$rsmpi_version.crate in cargo's registry cache after cargo fetch"

# The project: this repository's manifest and lock file, the examples from
# the package, o2g.patch applied.
build="$target/project"
rm -rf "$build"
mkdir -p "$build/src/bin"
sed "s|^mpi = { path = .*|mpi = { path = \"$O2G_ROOT/mpi\" }|" "$project/Cargo.toml" >"$build/Cargo.toml"
cp "$project/Cargo.lock" "$build/"
for entry in "${examples[@]}"; do
    read -r name _ <<<"$entry"
    tar -xzOf "$crate" "mpi-$rsmpi_version/examples/$name.rs" >"$build/src/bin/$name.rs" ||
        die "rsmpi $rsmpi_version has no examples/$name.rs"
done
patch -p1 -s --no-backup-if-mismatch -d "$build/src/bin" <"$project/o2g.patch" ||
    die "$project/o2g.patch does not apply to rsmpi $rsmpi_version's examples"
CARGO_TARGET_DIR="$target" cargo build --release --locked --quiet \
    --manifest-path "$build/Cargo.toml" ||
    die "building $project failed"

# list ITEM...: the items as Rust's Debug prints a slice: "[a, b, c]".
list() {
    local items="$*"
    echo "[${items// /, }]"
}

# expected NAME N: the lines (one per line, repeats counted) that the
# example NAME prints on N ranks; nothing for those that only assert.
expected() {
    local name="$1" n="$2" r s
    local ranks=() ones=() twos=() gathered=()
    for ((r = 0; r < n; r++)); do ranks+=("$r"); done
    case "$name" in
    simple)
        for r in "${ranks[@]}"; do
            echo "Hello parallel world from process $r of $n!"
        done ;;
    readme)
        for r in "${ranks[@]}"; do
            echo "Rank $r received value: [2, 4, 8, 16]."
        done ;;
    send_receive)
        for r in "${ranks[@]}"; do
            echo "Process $r got message $(((r + 1) % n))."
        done
        for ((s = 1; s < n; s++)); do
            echo "Process 0 got long message $(list "$s" $((s + 1)) $((s - 1)))."
        done ;;
    barrier)
        for ((s = 1; s < n; s++)); do ones+=(1) twos+=(2); done
        list "${ones[@]}" "${twos[@]}" ;;
    wait_any)
        echo "World size $n"
        echo "All requests completed"
        for ((r = 1; r < n; r++)); do echo "Process $r received data"; done ;;
    broadcast)
        for r in "${ranks[@]}"; do
            echo "Rank $r received value: 1024."
            echo "Rank $r received value: [2, 4, 8, 16]."
        done ;;
    all_to_all)
        for r in "${ranks[@]}"; do
            local u=()
            for ((s = 0; s < n; s++)); do u+=("$r"); done
            echo "u: $(list "${u[@]}")"
            echo "v: $(list "${ranks[@]}")"
        done ;;
    all_gather_varcount)
        for ((r = 0; r < n; r++)); do
            for ((s = 0; s < r; s++)); do gathered+=("$s"); done
        done
        for r in "${ranks[@]}"; do
            echo "Process $r got message $(list "${gathered[@]}")"
        done ;;
    esac
}

# missing OUTPUT NAME N: the expected lines OUTPUT lacks (or has fewer
# times than expected), as "COUNT x LINE"; nothing if none.
missing() {
    local out="$1" want line have
    expected "$2" "$3" | sort | uniq -c | while read -r want line; do
        have=$(grep -Fxc -- "$line" <<<"$out")
        ((have >= want)) || echo "$want x $line (found $have)"
    done
}

passed=0 failed=0
for entry in "${examples[@]}"; do
    read -r name n <<<"$entry"
    for transport in "${transports[@]}"; do
        label="$name (-n $n) over $transport"
        out=$(O2G_TRANSPORT="$transport" "$o2grun" -n "$n" --timeout 60 \
            "$target/release/$name" 2>&1)
        rc=$?
        lacks=""
        ((rc == 0)) && lacks=$(missing "$out" "$name" "$n")
        if ((rc == 0)) && [[ -z "$lacks" ]]; then
            echo "rsmpi-examples: $label: ok"
            passed=$((passed + 1))
        else
            if ((rc != 0)); then
                echo "rsmpi-examples: $label: FAILED (o2grun exit status $rc)"
            else
                echo "rsmpi-examples: $label: FAILED (output lacks expected lines)"
                sed 's/^/    missing: /' <<<"$lacks"
            fi
            sed 's/^/    | /' <<<"$out" | tail -n 40
            failed=$((failed + 1))
        fi
    done
done

echo "rsmpi-examples: $passed passed, $failed failed"
((failed == 0))
