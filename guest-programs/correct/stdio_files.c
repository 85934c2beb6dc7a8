// stdio_files: a temp file via mkstemp in /tmp written with stdio and raw write, read back with
// fread/fgets/fscanf/pread, lseek/ftell/fstat, then unlinked; output on both stdout and stderr.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void)
{
    char path[] = "/tmp/rtgrind-stdio-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    FILE *f = fdopen(fd, "w+");
    for (int i = 0; i < 1000; i++)
        fprintf(f, "line %04d value %04d\n", i, i * i % 9973); /* 21 bytes each */
    fputs("the end\n", f);
    fflush(f);
    long size = ftell(f);
    printf("wrote %ld bytes\n", size);
    fprintf(stderr, "stderr: file written\n");

    /* Read it back line by line. */
    rewind(f);
    char line[128];
    int lines = 0;
    unsigned long sum = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        int n, v;
        if (sscanf(line, "line %d value %d", &n, &v) == 2)
            sum += (unsigned long)(n * 31 + v);
    }
    printf("read %d lines, sum=%lu\n", lines, sum);

    /* Random access: fseek + fscanf, pread, lseek. */
    fseek(f, 21L * 500, SEEK_SET);
    int n = -1, v = -1;
    if (fscanf(f, "line %d value %d", &n, &v) == 2)
        printf("record 500: n=%d v=%d\n", n, v);
    char buf[32] = { 0 };
    ssize_t r = pread(fd, buf, 21, 21L * 999);
    buf[r > 0 ? r - 1 : 0] = 0; /* drop the newline */
    printf("pread of record 999: '%s'\n", buf);
    struct stat st;
    fstat(fd, &st);
    printf("fstat size=%lld regular=%d mode=%o\n", (long long)st.st_size, S_ISREG(st.st_mode),
           (unsigned)(st.st_mode & 0777));

    /* Binary data with fwrite/fread and writev/readv on the raw descriptor. */
    fseek(f, 0, SEEK_END);
    double data[256];
    for (int i = 0; i < 256; i++)
        data[i] = i * 0.125;
    fwrite(data, sizeof data[0], 256, f);
    fflush(f);
    struct iovec iov[2] = { { "vec-one|", 8 }, { "vec-two\n", 8 } };
    ssize_t wv = writev(fd, iov, 2);
    double back[256];
    fseek(f, size, SEEK_SET);
    size_t got = fread(back, sizeof back[0], 256, f);
    printf("binary: writev=%zd fread=%zu equal=%d\n", wv, got,
           memcmp(data, back, sizeof data) == 0);
    char v1[8], v2[8];
    struct iovec riov[2] = { { v1, 8 }, { v2, 8 } };
    lseek(fd, size + (off_t)sizeof data, SEEK_SET);
    ssize_t rv = readv(fd, riov, 2);
    printf("readv=%zd '%.8s' '%.7s'\n", rv, v1, v2);
    printf("final size %lld\n", (long long)lseek(fd, 0, SEEK_END));
    fclose(f);

    /* Append mode, then unlink; the file must be gone afterwards. */
    FILE *a = fopen(path, "a");
    fprintf(a, "appended\n");
    fclose(a);
    a = fopen(path, "r");
    fseek(a, -9, SEEK_END);
    fgets(line, sizeof line, a);
    fclose(a);
    printf("last line: %s", line);
    if (unlink(path) != 0)
        perror("unlink");
    errno = 0;
    FILE *gone = fopen(path, "r");
    printf("after unlink: fopen %s, errno=%s\n", gone ? "succeeded" : "failed",
           errno == ENOENT ? "ENOENT" : "other");

    /* Interleaved stdout/stderr writes, both unbuffered relative to each other by flushing. */
    for (int i = 0; i < 3; i++) {
        printf("stdout %d\n", i);
        fflush(stdout);
        fprintf(stderr, "stderr %d\n", i);
    }
    /* Writing to /dev/null. */
    FILE *dn = fopen("/dev/null", "w");
    printf("fprintf to /dev/null returned %d\n", fprintf(dn, "discarded %d\n", 12345));
    fclose(dn);
    return 0;
}
