#!/bin/bash
# Real-bug benchmark of `rtgrind --tool=suppress`: does it name the true root cause of a crash in
# programs nobody on the project wrote? Each case is a Debian 12 source package whose
# debian/patches holds the fix for a known memory bug; the script drops (reverse-applies) that
# one patch, builds the program with `-g -O0` and with `-g -O2` (both -fno-stack-protector,
# -U_FORTIFY_SOURCE), checks that the crafted input crashes it natively, runs
# `target/release/rtgrind --tool=suppress` on it (with a timeout) and prints one table row per
# build: program, source version, bug, the expected root cause (the line the fix is about, found
# by its text in the reverted source), the headline rtgrind reported, the number of runs, and a
# verdict: right line / right function / wrong / could not conclude, marked "(run looped)" or
# "(then failed otherwise)" where rtgrind qualified its answer so. Rows that are not a plain
# "right line" are followed by rtgrind's chain of runs (its `suppress:` lines).
#
# The cases (10 programs, 12 bugs):
#   unzip 6.0      CVE-2022-0529  heap overflow: strcat of "#Lxxxxxxxx" escapes (10 bytes) into a
#                                 buffer sized 8 per character (wide_to_local_string);
#                                 reverted: debian/patches/28-cve-2022-0529-and-cve-2022-0530.patch
#   unzip 6.0      CVE-2014-9636  heap overflow: memcpy of a "stored" extra field longer than its
#                                 declared size (memextract, via test_compr_eb, `unzip -t`);
#                                 reverted: debian/patches/12-cve-2014-9636-test-compr-eb.patch
#   giflib 5.2.1   Debian #715963 (upstream bug 153) an option missing its argument makes getarg
#                                 read argv past its end: sscanf(NULL) (gif2rgb -s 10);
#                                 reverted: debian/patches/fix-get-args-segment-violation.patch
#   html2text 1.3.2a Debian #716064 `-width` as the last argument: atoi(argv[argc]) = atoi(NULL);
#                                 reverted: debian/patches/970-fix-arg-parsing.patch
#   sharutils 4.15.2 CVE-2018-1000097 heap overflow: unshar's fgets(rw_buffer, BUFSIZ, file) into a
#                                 4096-byte block (a line of 8000 characters);
#                                 reverted: debian/patches/01-fix-heap-buffer-overflow-cve-2018-1000097.patch
#   unrtf 0.21.10  CVE-2016-10091 stack overflow: sprintf of an int into char str[10] (cmd_emboss,
#                                 \embo-2147483648); put back by editing the fix out of convert.c
#   netcat 1.10    rservice       global overflow: data/rservice.c's memcpy of its command line
#                                 into static char buf[256], faulting where memory ends;
#                                 reverted: debian/patches/rservice-buf.patch
#   arj 3.10.22    Debian #774015 global overflow: read_c_len's run of zero code lengths runs past
#                                 c_len[NC] into the next globals' pointers, freed later (arj t);
#                                 reverted: debian/patches/security-afl.patch
#   mp3gain 1.6.2  stack overflow: sprintf of an APE tag's track gain (1e300) into
#                                 valueString[100] (WriteMP3GainAPETag, `mp3gain -g 2`);
#                                 reverted: debian/patches/fix-security-bugs.patch
#   unace 1.2b     CVE-2015-2063  global overflow: read_header's copy of a header shorter than its
#                                 fields, its length below zero (`unace l`);
#                                 reverted: debian/patches/006_security-afl.patch
#   unace 1.2b     CVE-2005-0160  stack overflow: ace_fname's strncpy of a header's file name for
#                                 the length it claims into char[512] (`unace l`); put back by
#                                 taking 003_security.patch's clamp out (006 reverted too)
#   fig2dev 3.2.8b CVE-2025-46399 NULL dereference (no corruption): a list walk not reset reads
#                                 past the last control point (fig2dev -L ge on a spline);
#                                 reverted: debian/patches/43_CVE-2025-46399.patch
# unzip is built with -DNO_EXCEPT_SIGNALS: its own SIGSEGV/SIGABRT handlers would otherwise turn
# the crash into `exit(80)` (rtgrind then sees no failure). The unzip cases run with LC_ALL=C.
#
# Run from anywhere (it finds the project root from its own path), on Debian 12 with access to
# the Debian package archive; it builds nothing in the repo and needs rtgrind built already:
#   cargo build --release && bash benches/real-bugs.sh
# Environment: TIMEOUT (seconds per rtgrind run, 600), RTGRIND (binary), KEEP=1 (keep the
# scratch directory ${TMPDIR:-/tmp}/rtgrind-real-bugs.*). Downloaded source packages are cached
# in ${TMPDIR:-/tmp}/rtgrind-real-bugs-src. Missing tools (gcc, g++, make, patch, python3,
# dpkg-dev) are apt-get installed, and deb-src entries for bookworm are added to
# /etc/apt/sources.list.d/ if apt has none (both need root; the script says when it does so).
# Exits 0 whatever rtgrind answers: it is a benchmark, not a test.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/benches/real-bugs
rtgrind=${RTGRIND:-$root/target/release/rtgrind}
limit=${TIMEOUT:-600}
base=${TMPDIR:-/tmp}
cache=$base/rtgrind-real-bugs-src
work=$(mktemp -d "$base/rtgrind-real-bugs.XXXXXX")
rows=$work/rows
details=$work/details
: > "$rows"
: > "$details"
trap '[ "${KEEP:-0}" = 1 ] && echo "real-bugs: scratch directory kept: $work" >&2 || rm -rf "$work"' EXIT
unset CFLAGS CXXFLAGS CPPFLAGS LDFLAGS MAKEFLAGS
export LC_ALL=C

say() { echo "real-bugs: $*" >&2; }

# --- tools and sources ---------------------------------------------------------------------
missing=
for t in gcc:gcc g++:g++ make:make patch:patch python3:python3 dpkg-source:dpkg-dev \
    autoreconf:autoconf automake:automake /usr/include/x86_64-linux-gnu/mpg123.h:libmpg123-dev \
    /usr/share/misc/config.sub:autotools-dev timeout:coreutils; do
    # (a command, or a file a build needs)
    command -v "${t%%:*}" > /dev/null || [ -e "${t%%:*}" ] || missing="$missing ${t#*:}"
done
if [ -n "$missing" ]; then
    say "installing missing tools:$missing (apt-get install)"
    apt-get update -q > /dev/null && apt-get install -y -q --no-install-recommends $missing > /dev/null
fi
if [ -z "$(apt-cache showsrc unzip 2> /dev/null)" ]; then
    say "no deb-src entries: adding /etc/apt/sources.list.d/rtgrind-real-bugs-src.sources and running apt-get update"
    cat > /etc/apt/sources.list.d/rtgrind-real-bugs-src.sources << 'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update -q > /dev/null
fi
# wait_rtgrind: wait up to 10 minutes for the binary (someone may be rebuilding it)
wait_rtgrind() {
    n=0
    while [ ! -x "$rtgrind" ] && [ $n -lt 60 ]; do
        [ $n = 0 ] && say "waiting for $rtgrind"
        sleep 10
        n=$((n + 1))
    done
    [ -x "$rtgrind" ]
}
wait_rtgrind || { say "no rtgrind binary at $rtgrind (cargo build --release)"; exit 0; }

# fetch PKG VERSION...: unpack the Debian source package (patches applied) into $work/PKG and
# set $version; tries each VERSION in turn, then the newest the archive offers.
fetch() {
    pkg=$1
    shift
    mkdir -p "$cache/$pkg"
    dsc=
    for v in "$@" ""; do
        d=$(ls "$cache/$pkg/${pkg}_${v:-}"*.dsc 2> /dev/null | tail -1)
        if [ -z "$d" ]; then
            (cd "$cache/$pkg" && apt-get source -q --download-only "$pkg${v:+=$v}" > /dev/null 2>&1)
            d=$(ls "$cache/$pkg/${pkg}_${v:-}"*.dsc 2> /dev/null | tail -1)
        fi
        [ -n "$d" ] && { dsc=$d; break; }
    done
    [ -n "$dsc" ] || { say "cannot fetch the source of $pkg"; return 1; }
    version=$(sed -n 's/^Version: //p' "$dsc")
    rm -rf "$work/$pkg"
    dpkg-source --no-check -x "$dsc" "$work/$pkg" > /dev/null 2>&1 || { say "cannot unpack $dsc"; return 1; }
}

# tree PKG PATCH NAME: a copy of $work/PKG with debian/patches/PATCH reverse-applied, in $work/NAME
tree() {
    rm -rf "$work/$3"
    cp -a "$work/$1" "$work/$3"
    (cd "$work/$3" && patch -R -p1 -s < "debian/patches/$2") || { say "cannot revert $2"; return 1; }
}

# expect DIR FILE TEXT [last]: the line of TEXT (fixed string) in DIR/FILE, the first or last one
expect() {
    m=$(grep -nF -- "$3" "$1/$2" | cut -d: -f1)
    [ "${4:-}" = last ] && m=$(echo "$m" | tail -1) || m=$(echo "$m" | head -1)
    echo "$2:$m"
}

# case PROGRAM VERSION BUG OPT EXPECTED FUNC DIR STDIN -- CMD...: native run, rtgrind run, row
# ($prep, if set, is run before each: a program that rewrites its input gets it fresh)
case_() {
    prog=$1 ver=$2 bug=$3 opt=$4 exp=$5 func=$6 dir=$7 in=$8
    shift 9
    id=$prog-$opt-$(echo "$bug" | tr -c 'A-Za-z0-9\n' _)
    if [ ! -x "$dir/$1" ] && ! command -v "$1" > /dev/null; then
        echo "| $prog | $ver | $bug | $opt | $exp | (build failed) | - | not run |" >> "$rows"
        return
    fi
    eval "${prep:-}"
    { (cd "$dir" && timeout 60 "$@" < "$in" > /dev/null 2>&1); } 2> /dev/null
    st=$?
    if [ $st -gt 128 ] && [ $st -ne 124 ]; then native=SIG$(kill -l $((st - 128))); else native="exit $st"; fi
    wait_rtgrind
    start=$(date +%s)
    eval "${prep:-}"
    (cd "$dir" && timeout "$limit" "$rtgrind" --tool=suppress "$@" < "$in" > /dev/null 2> "$work/$id.log")
    rc=$?
    secs=$(($(date +%s) - start))
    head=$(sed -n 's/.*suppress: first point of memory corruption: //p' "$work/$id.log" | head -1)
    rep=$(echo "$head" | sed 's/, inside .*//')
    runs=$(sed -n 's/.*suppress: \([0-9]*\) runs* (.*/\1/p; s/.*suppress: \([0-9]*\) runs*, .*/\1/p' "$work/$id.log" | head -1)
    if [ -z "$rep" ]; then
        case $rc in
            124) verdict="could not conclude (timeout ${limit}s)" ;;
            0) verdict="could not conclude (saw no failure)" ;;
            *) verdict="could not conclude (exit $rc)" ;;
        esac
        rep=-
    elif [ "${rep%% *}" = "$exp" ]; then
        verdict="right line"
    elif [ "$(echo "$rep" | sed -n 's/.*(\(.*\))$/\1/p')" = "$func" ]; then
        verdict="right function"
    else
        verdict=wrong
    fi
    # A root cause the search qualified (its suppression run looped, or failed otherwise on
    # nothing defined) is marked so.
    case $head in
        *"made the program loop"*) verdict="$verdict (run looped)" ;;
        *"failed otherwise"*) verdict="$verdict (then failed otherwise)" ;;
    esac
    echo "| $prog | $ver | $bug | $opt | $exp ($func) | $rep | ${runs:--} | $verdict | $native | ${secs}s |" >> "$rows"
    say "$prog $opt $bug: $verdict ($rep)"
    if [ "$verdict" != "right line" ]; then
        {
            echo "--- $prog $opt, $bug: expected $exp ($func), rtgrind exit $rc; its chain of runs:"
            grep 'suppress:' "$work/$id.log" | sed 's/^==[0-9]*== //'
        } >> "$details"
    fi
}

O0="-g -O0 -fno-stack-protector -U_FORTIFY_SOURCE"
O2="-g -O2 -fno-stack-protector -U_FORTIFY_SOURCE"

# --- unzip ---------------------------------------------------------------------------------
if fetch unzip 6.0-28; then
    uver=$version
    udefs="-DACORN_FTYPE_NFS -DWILD_STOP_AT_DIR -DLARGE_FILE_SUPPORT -DUNICODE_SUPPORT \
-DUNICODE_WCHAR -DUTF8_MAYBE_NATIVE -DNO_LCHMOD -DDATE_FORMAT=DF_YMD -DIZ_HAVE_UXUIDGID \
-DNOMEMCPY -DNO_WORKING_ISPRINT -DNO_EXCEPT_SIGNALS" # debian/rules' DEFINES less bzip2, plus NO_EXCEPT_SIGNALS
    python3 "$data/mkzip.py" "$work/utf8-name.zip" utf8-name 200
    python3 "$data/mkzip.py" "$work/os2-ef.zip" os2-ef 2000
    for o in O0 O2; do
        eval "flags=\$$o"
        for b in 0529:28-cve-2022-0529-and-cve-2022-0530.patch 9636:12-cve-2014-9636-test-compr-eb.patch; do
            t=unzip-$o-${b%%:*}
            tree unzip "${b#*:}" "$t" || continue
            say "building $t"
            make -C "$work/$t" -f unix/Makefile -j2 CC=gcc LF2= CF="$flags -I. $udefs" unzip > "$work/$t.build" 2>&1
        done
        d=$work/unzip-$o-0529
        case_ unzip "$uver" "CVE-2022-0529 heap overflow" "-$o" \
            "$(expect "$d" process.c 'strcat(buffer, escape_string);' last)" wide_to_local_string \
            "$d" /dev/null -- ./unzip -t "$work/utf8-name.zip"
        d=$work/unzip-$o-9636
        case_ unzip "$uver" "CVE-2014-9636 heap overflow" "-$o" \
            "$(expect "$d" extract.c 'memcpy((char *)tgt, (char *)G.inptr')" memextract \
            "$d" /dev/null -- ./unzip -t "$work/os2-ef.zip"
    done
fi

# --- giflib --------------------------------------------------------------------------------
if fetch giflib 5.2.1-2.5+deb12u1 5.2.1-2.5; then
    for o in O0 O2; do
        eval "flags=\$$o"
        t=giflib-$o
        tree giflib fix-get-args-segment-violation.patch "$t" || continue
        say "building $t"
        make -C "$work/$t" -j2 OFLAGS="$flags" gif2rgb > "$work/$t.build" 2>&1
        export LD_LIBRARY_PATH=$work/$t # gif2rgb links libgif.so
        case_ giflib "$version" "Debian #715963 argv past end, NULL deref" "-$o" \
            "$(expect "$work/$t" getarg.c 'ScanRes = sscanf(*((*argv)++), "%d",')" GAGetParmeters \
            "$work/$t" /dev/null -- ./gif2rgb -s 10
        unset LD_LIBRARY_PATH
    done
fi

# --- html2text -----------------------------------------------------------------------------
if fetch html2text 1.3.2a-28; then
    printf '<html><body><p>Hello, <b>world</b>.</p></body></html>\n' > "$work/page.html"
    for o in O0 O2; do
        eval "flags=\$$o"
        t=html2text-$o
        tree html2text 970-fix-arg-parsing.patch "$t" || continue
        say "building $t"
        (cd "$work/$t" && CXX=g++ ./configure && CXXFLAGS="$flags" make -j2 html2text) > "$work/$t.build" 2>&1
        case_ html2text "$version" "Debian #716064 argv past end, NULL deref" "-$o" \
            "$(expect "$work/$t" html2text.C '"-width"')" main \
            "$work/$t" "$work/page.html" -- ./html2text -width
    done
fi

# --- sharutils (unshar) ---------------------------------------------------------------------
# A line longer than the 4096-byte heap buffer, read by fgets(rw_buffer, BUFSIZ = 8192, file),
# overruns it into the archive's FILE (the crash is in ftello).
if fetch sharutils 1:4.15.2-9; then
    python3 -c "import sys; sys.stdout.write('X' * 8000 + '\n')" > "$work/long.shar"
    for o in O0 O2; do
        eval "flags=\$$o"
        t=sharutils-$o
        tree sharutils 01-fix-heap-buffer-overflow-cve-2018-1000097.patch "$t" || continue
        say "building $t"
        # (Debian's patches touch m4 files: keep make from running an aclocal it does not have.)
        (cd "$work/$t" && touch aclocal.m4 && sleep 1 && touch configure config.h.in \
            && find . -name Makefile.in -exec touch {} + \
            && ./configure -q CC=gcc CFLAGS="$flags" && make -j2) > "$work/$t.build" 2>&1
        case_ sharutils "$version" "CVE-2018-1000097 heap overflow" "-$o" \
            "$(expect "$work/$t/src" unshar.c 'if (!fgets (rw_buffer, BUFSIZ, file))')" find_archive \
            "$work/$t" /dev/null -- src/unshar "$work/long.shar"
    done
fi

# --- unrtf (convert.c) ----------------------------------------------------------------------
# CVE-2016-10091, put back: 0.21.10 has the fix upstream (char str[20] and snprintf in
# cmd_expand, cmd_emboss and cmd_engrave), so the three functions are edited back to 0.21.9's
# `char str[10]; sprintf(str, "%d", ...)`. \embo with the most negative int writes 12 bytes:
# the last two overrun the saved frame pointer (-O0; at -O2 the saved registers), and the caller
# reads its locals through it.
if fetch unrtf 0.21.10-clean-1; then
    printf '{\\rtf1\\ansi {\\embo-2147483648 hello} world}\n' > "$work/emboss.rtf"
    for o in O0 O2; do
        eval "flags=\$$o"
        t=unrtf-$o
        rm -rf "$work/$t" && cp -a "$work/unrtf" "$work/$t"
        sed -i '1850,1925s/char str\[20\];/char str[10];/; 1850,1925s/snprintf(str, 20, /sprintf(str, /' "$work/$t/src/convert.c"
        say "building $t"
        # (Installed: it reads its output formats from its data directory.)
        (cd "$work/$t" && autoreconf -fi && ./configure -q CC=gcc CFLAGS="$flags" --prefix="$work/$t/inst" && make -j2 && make install) > "$work/$t.build" 2>&1
        case_ unrtf "$version" "CVE-2016-10091 stack overflow (saved rbp)" "-$o" \
            "$(expect "$work/$t/src" convert.c 'sprintf(str, "%d", param);')" cmd_emboss \
            "$work/$t" /dev/null -- inst/bin/unrtf "$work/emboss.rtf"
    done
fi

# --- netcat (data/rservice.c) --------------------------------------------------------------
# The example rservice copies its command line into `static char buf[256]`; a 100,000-byte
# argument runs on to where memory ends and memcpy itself faults there.
if fetch netcat 1.10-47; then
    for o in O0 O2; do
        eval "flags=\$$o"
        t=netcat-$o
        tree netcat rservice-buf.patch "$t" || continue
        say "building $t"
        gcc $flags -w -o "$work/$t/rservice" "$work/$t/data/rservice.c" > "$work/$t.build" 2>&1
        case_ netcat "$version" "rservice global buffer overflow" "-$o" \
            "$(expect "$work/$t/data" rservice.c 'memcpy (p, argv[1], x);')" main \
            "$work/$t" /dev/null -- ./rservice "$(python3 -c 'print("A" * 100000)')" u
    done
fi

# --- arj (decode.c) ------------------------------------------------------------------------
# Debian #774015: read_c_len's runs of zero code lengths are not bounded by NC, so a crafted
# Huffman table writes past the global c_len[NC] into the next globals' pointers; the crash is a
# later free() of one of them (decode.c:490, or at exit). The archive is a deterministic text
# file packed by the built arj with -m1, with one byte of its compressed table changed (found
# by fuzzing that byte range; the native run crashes every time).
if fetch arj 3.10.22-26; then
    python3 -c "
import random
random.seed(1)
words = ['alpha', 'beta', 'gamma', 'delta', '\n', 'zeta ', 'eta', 'theta', '0123', 'xyz!']
open('$work/f.txt', 'w').write(''.join(random.choice(words) for _ in range(3000)))"
    for o in O0 O2; do
        eval "flags=\$$o"
        t=arj-$o
        tree arj security-afl.patch "$t" || continue
        say "building $t"
        (cd "$work/$t" && cp /usr/share/misc/config.sub /usr/share/misc/config.guess gnu/ \
            && (cd gnu && autoreconf -i && ./configure CFLAGS="$flags -w") \
            && SOURCE_DATE_EPOCH=1600000000 make -f GNUmakefile) > "$work/$t.build" 2>&1
        bin=$work/$t/linux-gnu/en/rs/arj/arj
        if [ ! -s "$work/table.arj" ] && [ -x "$bin" ]; then
            (cd "$work" && "$bin" a -m1 -y table.arj f.txt > /dev/null 2>&1)
            python3 - "$work/table.arj" << 'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
size = lambda at: int.from_bytes(b[at + 2:at + 4], 'little')
# Each header: id (2), basic size (2), the basic header, its CRC (4), an empty extended one (2).
data = 4 + size(0) + 6
data += 4 + size(data) + 6
b[data + 36] = 0xa9
open(p, 'wb').write(b)
EOF
        fi
        case_ arj "$version" "Debian #774015 global overflow, invalid free" "-$o" \
            "$(expect "$work/$t" decode.c '     c_len[i++]=0;')" read_c_len \
            "$work/$t" /dev/null -- linux-gnu/en/rs/arj/arj t "$work/table.arj" -y
    done
fi

# --- mp3gain (apetag.c) -------------------------------------------------------------------
# The fix (fix-security-bugs.patch, from openSUSE) clamps the ReplayGain values read from a
# file's APE tag before WriteMP3GainAPETag prints them with sprintf into valueString[100]: a
# track gain of 1e300 prints 310 characters over the stack. The file is 50 silent MPEG-1 layer
# III frames and an APE tag with that gain; `mp3gain -g 2` applies a gain and rewrites the tag.
# It rewrites the file in place, so each of the two runs gets a fresh copy.
if fetch mp3gain 1.6.2-2; then
    python3 "$data/mkmp3.py" "$work/huge-gain.mp3"
    for o in O0 O2; do
        eval "flags=\$$o"
        t=mp3gain-$o
        tree mp3gain fix-security-bugs.patch "$t" || continue
        say "building $t"
        make -C "$work/$t" CFLAGS="$flags -w -DHAVE_MEMCPY" > "$work/$t.build" 2>&1
        prep="cp '$work/huge-gain.mp3' '$work/$t/track.mp3'"
        case_ mp3gain "$version" "stack overflow (sprintf of a tag's gain)" "-$o" \
            "$(expect "$work/$t" apetag.c 'sprintf(valueString,"%-+9.6f", info->trackGain);')" WriteMP3GainAPETag \
            "$work/$t" /dev/null -- ./mp3gain -g 2 track.mp3
        prep=
    done
fi

# --- unace ----------------------------------------------------------------------------------
# CVE-2015-2063 (Debian #775003; the fix is debian/patches/006_security-afl.patch): read_header
# copies the rest of a header into the global header struct with the length `rd - (tp -
# readbuf)`, which goes below zero (a huge size_t) for a header shorter than its fields. The
# archive's main header is 10 bytes; `unace l` lists it. At -O2 gcc inlines the copy as `rep
# movsq`.
# CVE-2005-0160 (Debian #296839; the fix is in debian/patches/003_security.patch, which later patches build on,
# so only its clamp in ace_fname is taken out, as unrtf's fix is): ace_fname copies a file
# header's name with strncpy into `char file[PATH_MAX]` (512) for the length the header claims;
# a name claiming 60,000 bytes pads zeros up the stack. The tree has 006 reverted too, as that
# patch's checks would refuse such a header.
if fetch unace 1.2b-23; then
    python3 "$data/mkace.py" short-header "$work/short-header.ace"
    python3 "$data/mkace.py" long-name "$work/long-name.ace" 60000
    for o in O0 O2; do
        eval "flags=\$$o"
        t=unace-$o
        tree unace 006_security-afl.patch "$t" || continue
        cp -a "$work/$t" "$work/$t-name"
        sed -i '/if (i > (size - 1))/,/i = size - 1;/d' "$work/$t-name/uac_crt.c"
        for d in "$t" "$t-name"; do
            say "building $d"
            make -C "$work/$d" -f unix/makefile CC=gcc CPPFLAGS="-DUNIX -DCASEINSENSE -DLO_HI_BYTE_ORDER" CFLAGS="$flags -w" > "$work/$d.build" 2>&1
        done
        case_ unace "$version" "CVE-2015-2063 global overflow (a length below zero)" "-$o" \
            "$(expect "$work/$t" unace.c 'memcpy(mhead.AV, tp, rd-(USHORT)(tp-readbuf));')" read_header \
            "$work/$t" /dev/null -- ./unace l "$work/short-header.ace"
        case_ unace "$version" "CVE-2005-0160 stack overflow (strncpy of a long name)" "-$o" \
            "$(expect "$work/$t-name" uac_crt.c 'strncpy(s, (*(tfhead *) head).FNAME, i);')" ace_fname \
            "$work/$t-name" /dev/null -- ./unace l "$work/long-name.ace"
    done
fi

# --- fig2dev -------------------------------------------------------------------------------
# Not a memory corruption: a list walk not reset goes past the last control point and
# dereferences the list's (legitimate) NULL terminator. The line that read it is expected.
if fetch fig2dev 1:3.2.8b-3+deb12u2 1:3.2.8b-3; then
    printf '#FIG 3.1\nLandscape\nCenter\nMetric\n1200 2\n3 2 0 1 0 7 50 -1 -1 0.0 0 0 0 3\n\t 0 0 1200 0 1200 1200\n\t 600 600 600 600\n\t 600 600 600 600\n\t 600 600 600 600\n' > "$work/itp.fig"
    for o in O0 O2; do
        eval "flags=\$$o"
        t=fig2dev-$o
        tree fig2dev 43_CVE-2025-46399.patch "$t" || continue
        say "building $t"
        (cd "$work/$t" && touch aclocal.m4 && sleep 1 && touch configure config.h.in \
            && find . -name Makefile.in -exec touch {} + \
            && ./configure -q CC=gcc CFLAGS="$flags" && make -j2) > "$work/$t.build" 2>&1
        case_ fig2dev "$version" "CVE-2025-46399 list walk past its end, NULL deref" "-$o" \
            "$(expect "$work/$t/fig2dev/dev" genge.c 'b = a->next;' last)" genge_itp_spline \
            "$work/$t" /dev/null -- fig2dev/fig2dev -L ge "$work/itp.fig"
    done
fi

echo
echo "| program | version | bug | opt | expected root cause | reported (headline) | runs | verdict | native | time |"
echo "|---|---|---|---|---|---|---:|---|---|---:|"
cat "$rows"
if [ -s "$details" ]; then
    echo
    cat "$details"
fi
exit 0
