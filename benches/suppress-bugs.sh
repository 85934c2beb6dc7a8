#!/bin/sh
# Runs and wall time of the suppression search on every test bug (guest-programs/bugs/), as
# the table in docs/PERFORMANCE.md shows them. Builds rtgrind (release) first.
#   sh benches/suppress-bugs.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
rtgrind=${CARGO_TARGET_DIR:-$root/target}/release/rtgrind
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# build NAME OUT FLAGS...: guest-programs/bugs/NAME.c (or .cpp) into $dir/OUT
build() {
    name=$1 out=$2
    shift 2
    src=$root/guest-programs/bugs/$name.c
    [ -f "$src" ] || src=$root/guest-programs/bugs/$name.cpp
    case $src in *.cpp) cc=g++ ;; *) cc=gcc ;; esac
    $cc "$@" -pthread -o "$dir/$out" "$src"
}

# row LABEL STDIN OPTIONS -- PROGRAM ARGS...: one search, one table row
row() {
    label=$1 input=$2
    shift 2
    printf '%s' "$input" > "$dir/stdin"
    err=$("$rtgrind" --tool=suppress "$@" < "$dir/stdin" 2>&1 >/dev/null || true)
    runs=$(printf '%s\n' "$err" | sed -n 's/.*suppress: \([0-9]*\) runs (.*), \([0-9.]*\) s:.*/\1 | \2 s/p')
    again=$(printf '%s\n' "$err" | sed -n 's/.* runs (.*, \([0-9]*\) to trace .*/\1/p')
    place=$(printf '%s\n' "$err" | sed -n 's/.*first point of memory corruption: //p' | head -1)
    echo "| $label | $runs | ${again:-0} | $place |"
}

O0="-g -O0 -fno-stack-protector"
O2="-g -O2 -fno-stack-protector"
for b in copy_paste stack_smash local_pointer global_overflow heap_overflow small_alloc double_free \
    null_return use_after_free two_inputs pipe_copy assert_fail status_flag thread_overflow stalled_poll unset_base \
    strcpy_into_pointer long_smash double_free_early_return free_of_stack sscanf_smash sscanf_call_sites strcat_loop \
    pointer_and_index index_from_input leftover_file smash_by argv_past_end memcpy_neighbour global_off_by_one memset_pointer \
    escape_concat adjacent_ints adjacent_locals double_free_kinds argv_cursor smash_made unset_by_parser uaf_varargs copy_made; do
    build $b $b $O0 -w
done
build stack_smash stack_canary -g -O0 -fstack-protector-strong
for b in global_overflow heap_overflow pipe_copy escape_concat argv_cursor double_free_kinds unset_by_parser uaf_varargs copy_made \
    use_after_free pointer_and_index; do build $b ${b}_o2 $O2; done

A() { printf "%${1}s" | tr ' ' A; }
echo "| bug | runs | time | traced again | reported first point of memory corruption |"
echo "|---|---:|---:|---:|---|"
row "copy_paste (Fig. 5.1)" "1 2 3 100000000
" -- "$dir/copy_paste"
row "stack_smash" "" -- "$dir/stack_smash" "$(A 54)"
row "stack_smash, -fstack-protector-strong" "" -- "$dir/stack_canary" "$(A 54)"
row "local_pointer" "" -- "$dir/local_pointer" 12345678901234567890123
row "global_overflow" "" -- "$dir/global_overflow" "$(A 28)"
row "heap_overflow (glibc's abort, as natively)" "" -- "$dir/heap_overflow" "$(A 42)"
row "small_alloc" "" -- "$dir/small_alloc" 20
row "double_free" "" -- "$dir/double_free" x
row "null_return" "" -- "$dir/null_return" three
row "use_after_free" "" -- "$dir/use_after_free" x
row "use_after_free, -O2" "" -- "$dir/use_after_free_o2" x
row "two_inputs, 13 characters" "" -- "$dir/two_inputs" "$(A 13)"
row "two_inputs, 23 characters" "" -- "$dir/two_inputs" "$(A 23)"
row "pipe_copy (memcpy and a pipe)" "" -- "$dir/pipe_copy" "$(A 23)"
row "assert_fail" "" -- "$dir/assert_fail" 4
row "status_flag, --failure=exit-code" "" --failure=exit-code -- "$dir/status_flag" ABCDEFGHIJKLMNOP
row "global_overflow, -O2" "" -- "$dir/global_overflow_o2" "$(A 28)"
row "heap_overflow, -O2" "" -- "$dir/heap_overflow_o2" "$(A 42)"
row "pipe_copy, -O2" "" -- "$dir/pipe_copy_o2" "$(A 23)"
row "thread_overflow (worker thread)" "" -- "$dir/thread_overflow" "$(A 24)"
row "stalled_poll (suppression run stopped by its budget)" "" -- "$dir/stalled_poll" tape
row "unset_base (a pointer computed from nothing defined)" "" -- "$dir/unset_base"
row "strcpy_into_pointer, puts" "" -- "$dir/strcpy_into_pointer" puts "$(A 23)"
row "long_smash, 1200 characters" "" -- "$dir/long_smash" "$(A 1200)"
row "double_free_early_return" "" -- "$dir/double_free_early_return" 5
row "free_of_stack" "" -- "$dir/free_of_stack" bob
row "sscanf_smash, 200 characters" "" -- "$dir/sscanf_smash" "$(A 200) 5"
row "sscanf_call_sites" "" -- "$dir/sscanf_call_sites" "$(A 20)" "$(A 20)"
row "strcat_loop, 40 characters (every call from the line)" "" -- "$dir/strcat_loop" "$(A 40)"
row "strcat_loop, 80 characters (top chunk)" "" -- "$dir/strcat_loop" "$(A 80)"
row "pointer_and_index, 8" "" -- "$dir/pointer_and_index" 8
row "pointer_and_index, 8, -O2" "" -- "$dir/pointer_and_index_o2" 8
row "index_from_input" "" -- "$dir/index_from_input" 100000000
(mkdir "$dir/cwd" && cd "$dir/cwd" && row "leftover_file (leaves a file, lists its directory)" "" -- "$dir/leftover_file" "$(A 20)")
mkdir "$dir/elsewhere"
(cd "$dir/cwd" && row "leftover_file, its file in another directory (runs drift)" "" -- "$dir/leftover_file" "$(A 20)" "$dir/elsewhere")
(cd "$dir/cwd" && row "leftover_file, another directory, the program's own copy loop" "" -- "$dir/leftover_file" "$(A 20)" "$dir/elsewhere" loop)
row "smash_by read" "$(A 100)" -- "$dir/smash_by" read "$(A 100)"
row "argv_past_end" "" -- "$dir/argv_past_end" 5
row "memcpy_neighbour" "" -- "$dir/memcpy_neighbour" "$(A 40)"
row "global_off_by_one" "" -- "$dir/global_off_by_one" x
row "memset_pointer" "" -- "$dir/memset_pointer" 16
row "escape_concat (strcat of the program's escapes past a buffer)" "" -- "$dir/escape_concat" "$(A 20)"
row "escape_concat, 40 characters, -O2 (earlier strcats overflowed too)" "" -- "$dir/escape_concat_o2" "$(A 40)"
row "adjacent_ints (an int beside the loop count, global)" "" -- "$dir/adjacent_ints" 100000000
row "adjacent_locals (the same in a local struct)" "" -- "$dir/adjacent_locals" 100000000
row "double_free_kinds, fast bin" "" -- "$dir/double_free_kinds" 32 7
row "double_free_kinds, merged into top" "" -- "$dir/double_free_kinds" 2000 0
row "double_free_kinds, consolidated" "" -- "$dir/double_free_kinds" 2000 7
row "double_free_kinds, mmapped (second free faults)" "" -- "$dir/double_free_kinds" 200000 0
row "double_free_kinds, fast bin, -O2" "" -- "$dir/double_free_kinds_o2" 32 7
row "argv_cursor" "" -- "$dir/argv_cursor" -s 10
row "argv_cursor, -O2 (cursor in a register)" "" -- "$dir/argv_cursor_o2" -s 10
row "smash_made, strcpy of the program's own string" "" -- "$dir/smash_made" 100 strcpy
row "smash_made, sprintf" "" -- "$dir/smash_made" 100 sprintf
row "unset_by_parser (the suppressed parse leaves a name NULL)" "" -- "$dir/unset_by_parser" -s
row "unset_by_parser, -O2" "" -- "$dir/unset_by_parser_o2" -s
row "uaf_varargs (a use after free through a varargs function)" "" -- "$dir/uaf_varargs" x
row "uaf_varargs, -O2" "" -- "$dir/uaf_varargs_o2" x
row "copy_made (memcpy of program-made bytes over the next global)" "" -- "$dir/copy_made" x
row "copy_made, the next heap block" "" -- "$dir/copy_made" x heap
row "copy_made, the next heap block, -O2 (an inlined rep movsd)" "" -- "$dir/copy_made_o2" x heap
