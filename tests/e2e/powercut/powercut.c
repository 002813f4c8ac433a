/* A power-cut shim for tests (LD_PRELOAD): a file only keeps what was synced.
 *
 * Every fsync/fdatasync of a file whose path starts with $ORBIT_POWERCUT_PREFIX (the database
 * path: the database itself, its -wal and -journal) first copies the file, as it is once the
 * sync returns, to "<path>.synced" (written aside, then renamed over: a kill mid-copy keeps the
 * previous copy). A "power cut" is then: SIGKILL the process, and put each file back to its
 * ".synced" copy (a file never synced is removed). Every write made after a file's last sync is
 * dropped, as a disk cache that loses power drops it. The copying is done before the real sync
 * returns, so a caller told "synced" has its copy. Removing a file (unlink) counts as durable at
 * once, as on a journaling file system (SQLite commits a rollback journal by deleting it).
 * See tests/e2e/test_power_loss.py.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int named(const char *path) {
    const char *prefix = getenv("ORBIT_POWERCUT_PREFIX");
    if (prefix == NULL || *prefix == '\0') return 0;
    if (strncmp(path, prefix, strlen(prefix)) != 0) return 0;
    const char *rest = path + strlen(prefix);
    return *rest == '\0' || strcmp(rest, "-wal") == 0 || strcmp(rest, "-journal") == 0;
}

static int watched(int fd, char *path, size_t size) {
    char link[64];
    ssize_t n;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, size - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    return named(path);
}

static int copy_aside(int fd, const char *path) {
    char tmp[PATH_MAX + 16], synced[PATH_MAX + 16], buf[65536];
    off_t at = 0;
    ssize_t got;
    snprintf(tmp, sizeof tmp, "%s.synced.tmp", path);
    snprintf(synced, sizeof synced, "%s.synced", path);
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) return -1;
    while ((got = pread(fd, buf, sizeof buf, at)) > 0) {
        if (write(out, buf, (size_t)got) != got) { close(out); return -1; }
        at += got;
    }
    close(out);
    if (got < 0) return -1;
    return rename(tmp, synced);
}

static int synced(int fd, int (*real)(int)) {
    char path[PATH_MAX];
    int result = real(fd);
    if (result == 0 && watched(fd, path, sizeof path)) {
        pthread_mutex_lock(&lock);
        if (copy_aside(fd, path) != 0) result = -1;
        pthread_mutex_unlock(&lock);
    }
    return result;
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return synced(fd, real);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return synced(fd, real);
}

int unlink(const char *path) {
    static int (*real)(const char *);
    char synced[PATH_MAX + 16];
    if (!real) real = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
    int result = real(path);
    if (result == 0 && path[0] == '/' && named(path)) {
        snprintf(synced, sizeof synced, "%s.synced", path);
        pthread_mutex_lock(&lock);
        real(synced);
        pthread_mutex_unlock(&lock);
    }
    return result;
}
