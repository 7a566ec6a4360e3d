/*
 * The node's files for any dynamically linked program in a twin process container (an exec'd
 * `cat /proc/<pid>/cgroup`, a shell, a C or Go-with-cgo agent), loaded with LD_PRELOAD.  The same
 * rules as the Python start-up hook, applied to libc's path entry points:
 *
 *   - /proc/<pid>/cgroup (and under a hostPath mount of /proc) of a twin host PID reads the twin's
 *     text (a memfd); a twin PID this container cannot see, or one that has ended, does not exist;
 *     every other /proc path is the machine's;
 *   - an absolute path under a mount (hostPath, emptyDir, service account, the program's folder)
 *     is its folder on this machine; a read-only mount refuses writes with EROFS;
 *   - any other write lands in the container's own layer (a file changed in place is copied up
 *     first), reads see the layer first, then the machine; /dev and the twin's own folder pass.
 *
 * The table comes from the file named by STEPGRAPH_VIEW_FILES, one TAB-separated entry a line:
 *   proc <root>    mount <container path> <machine path> <0|1 read-only>
 *   own <folder>   rootfs <folder>
 * and cgroup texts from the bridge (twin_bridge.h): request "cgroup <pid>", reply "0 <JSON text>",
 * "1" (not a twin PID: the machine's /proc answers) or "2" (no such file).
 *
 * Mapping a path twice gives the same path (a mapped path lies under the twin's own folder, or is a
 * machine path outside every mount), so a Python program, whose hook maps first, sees one view.
 * Not covered: relative paths and the working directory (they are the machine's), execve of a path
 * under a mount, statically linked programs (LD_PRELOAD does not reach them), and glibc's internal
 * opens that do not go through these symbols.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "twin_bridge.h"

#define MAX_ENTRIES 64
/* What a real /proc/<pid>/cgroup stats as (a regular file of size 0, mode 0444): a stat of a twin
 * PID's file is answered with this machine's own, which has exactly that shape. */
#define PROC_FILE_SHAPE "/proc/self/cgroup"

struct mount {
    char *container;
    char *host;
    int read_only;
};

static struct mount mounts[MAX_ENTRIES]; /* longest container path first */
static int n_mounts;
static char *proc_roots[MAX_ENTRIES];
static int n_proc;
static char *own_folder, *rootfs;
static int ready;

/* The next definition of `name` (libc's), looked up once. */
#define REAL(name)                                                                                 \
    ({                                                                                             \
        static __typeof__(&name) real_##name;                                                      \
        if (!real_##name)                                                                          \
            real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name);                              \
        real_##name;                                                                               \
    })

/* -- the table --------------------------------------------------------------------------------- */
static char *next_field(char **p) {
    char *start = *p, *tab = strchr(start, '\t');
    if (tab) {
        *tab = '\0';
        *p = tab + 1;
    } else {
        *p = start + strlen(start);
    }
    return start;
}

static void strip_slash(char *s) {
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        s[--n] = '\0';
}

__attribute__((constructor)) static void load_table(void) {
    const char *file = getenv("STEPGRAPH_VIEW_FILES");
    if (!file)
        return;
    int fd = (int)REAL(open)(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    static char text[LINE_MAX_BYTES];
    ssize_t used = 0, n;
    while (used < (ssize_t)sizeof(text) - 1 && (n = read(fd, text + used, sizeof(text) - 1 - used)) > 0)
        used += n;
    close(fd);
    text[used] = '\0';
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *p = line, *kind = next_field(&p);
        if (!strcmp(kind, "proc") && n_proc < MAX_ENTRIES) {
            proc_roots[n_proc] = next_field(&p);
            strip_slash(proc_roots[n_proc++]);
        } else if (!strcmp(kind, "mount") && n_mounts < MAX_ENTRIES) {
            struct mount *m = &mounts[n_mounts++];
            m->container = next_field(&p);
            m->host = next_field(&p);
            m->read_only = !strcmp(next_field(&p), "1");
            strip_slash(m->container);
        } else if (!strcmp(kind, "own")) {
            own_folder = next_field(&p);
            strip_slash(own_folder);
        } else if (!strcmp(kind, "rootfs")) {
            rootfs = next_field(&p);
            strip_slash(rootfs);
        }
    }
    for (int i = 1; i < n_mounts; i++) /* insertion sort: longest container path first */
        for (int j = i; j > 0 && strlen(mounts[j].container) > strlen(mounts[j - 1].container); j--) {
            struct mount t = mounts[j];
            mounts[j] = mounts[j - 1];
            mounts[j - 1] = t;
        }
    ready = own_folder && rootfs;
}

/* -- paths ------------------------------------------------------------------------------------- */
/* `path` normalised as posixpath.normpath does (no "." or "..", single slashes); 0, or -1 too long. */
static int normalise(const char *path, char out[PATH_MAX]) {
    size_t len = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *end = strchrnul(p, '/');
        size_t n = (size_t)(end - p);
        if (n == 0 || (n == 1 && p[0] == '.')) {
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--; /* and its slash; ".." of "/" is "/" */
        } else {
            if (len + 1 + n >= PATH_MAX)
                return -1;
            out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p = end;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return 0;
}

static int under(const char *path, const char *root) {
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return 1;
    return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

static int join(char out[PATH_MAX], const char *a, const char *b) {
    return snprintf(out, PATH_MAX, "%s%s", a, b) < PATH_MAX ? 0 : -1;
}

/* mkdir -p of `path`'s parent folder (inside the layer). */
static void make_parents(const char *path) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + strlen(rootfs) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        REAL(mkdir)(buf, 0755);
        *p = '/';
    }
}

/* Before a container changes a machine file in place, give it its own copy (the layer). */
static void copy_up(const char *original, const char *layer) {
    struct stat st;
    if (REAL(lstat)(layer, &st) == 0 || REAL(stat)(original, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    int in = (int)REAL(open)(original, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return;
    int out = (int)REAL(open)(layer, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
    char buf[65536];
    ssize_t n;
    while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
        if (write(out, buf, (size_t)n) != n)
            break;
    close(in);
    if (out >= 0)
        close(out);
}

/* The twin's cgroup text of `pid` into `reply`-decoded `text`: 0 found, 1 not a twin PID, 2 none. */
static int twin_cgroup(const char *pid, char *text, size_t size) {
    char line[64];
    int gone, code = 1;
    snprintf(line, sizeof(line), "cgroup\t%s\n", pid);
    pthread_mutex_lock(&bridge_lock);
    if (bridge_request(line, &gone) == 0) {
        code = (int)strtol(reply, NULL, 10);
        const char *q = strchr(reply, '\t');
        size_t n = 0;
        if (code == 0 && q && q[1] == '"') { /* a JSON string: the escapes json.dumps writes */
            for (q += 2; *q && *q != '"' && n + 1 < size; q++) {
                char c = *q;
                if (c == '\\' && q[1]) {
                    c = *++q;
                    if (c == 'n') c = '\n';
                    else if (c == 't') c = '\t';
                    else if (c == 'r') c = '\r';
                    else if (c == 'u' && strlen(q) >= 5) {
                        char hex[5] = {q[1], q[2], q[3], q[4], 0};
                        c = (char)strtol(hex, NULL, 16);
                        q += 4;
                    }
                }
                text[n++] = c;
            }
        } else if (code == 0) {
            code = 1; /* not an answer we understand: the machine's file */
        }
        text[n] = '\0';
    }
    pthread_mutex_unlock(&bridge_lock);
    return code == 0 || code == 2 ? code : 1;
}

static int virtual_fd(const char *text) {
    int fd = memfd_create("twin-view", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len) {
        close(fd);
        return -1;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

enum { PASS, MAPPED, VIRTUAL, REFUSED };

/*
 * Where `path` is on this machine for this container.  PASS: use `path`; MAPPED: use `out`;
 * VIRTUAL: a twin cgroup file, its text in `out` (when `text` is set) or PROC_FILE_SHAPE in
 * `out`; REFUSED: fail with errno set.
 */
static int resolve(const char *path, int write, char out[PATH_MAX], int text) {
    char norm[PATH_MAX];
    if (!ready || !path || path[0] != '/' || normalise(path, norm) != 0)
        return PASS;
    for (int i = 0; i < n_proc; i++) {
        if (!under(norm, proc_roots[i]))
            continue;
        const char *rest = norm + strlen(proc_roots[i]);
        const char *digits = rest[0] == '/' ? rest + 1 : NULL;
        size_t nd = digits ? strspn(digits, "0123456789") : 0;
        if (nd > 0 && nd < 20 && !strcmp(digits + nd, "/cgroup")) {
            char pid[24];
            memcpy(pid, digits, nd);
            pid[nd] = '\0';
            int code = twin_cgroup(pid, out, PATH_MAX);
            if (code == 0 && write) {
                errno = EACCES;
                return REFUSED;
            }
            if (code == 0) {
                if (!text)
                    strcpy(out, PROC_FILE_SHAPE);
                return VIRTUAL;
            }
            if (code == 2) {
                errno = ENOENT;
                return REFUSED;
            }
        }
        return join(out, "/proc", rest) == 0 ? MAPPED : PASS;
    }
    for (int i = 0; i < n_mounts; i++) {
        const struct mount *m = &mounts[i];
        if (!under(norm, m->container))
            continue;
        if (write && m->read_only) {
            errno = EROFS;
            return REFUSED;
        }
        size_t skip = strcmp(m->container, "/") ? strlen(m->container) : 0;
        return join(out, m->host, norm + skip) == 0 ? MAPPED : PASS;
    }
    if (under(norm, own_folder) || under(norm, "/dev"))
        return PASS;
    if (join(out, rootfs, norm) != 0)
        return PASS;
    struct stat st;
    if (write) {
        make_parents(out);
        return MAPPED;
    }
    return REAL(lstat)(out, &st) == 0 ? MAPPED : PASS;
}

static int writes(int flags) {
    return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
}

static int mode_writes(const char *mode) {
    return strpbrk(mode, "wax+") != NULL;
}

/* -- open ------------------------------------------------------------------------------------- */
static int open_mapped(const char *path, int flags, mode_t mode, int (*real)(const char *, int, ...)) {
    char out[PATH_MAX];
    switch (resolve(path, writes(flags), out, 1)) {
    case VIRTUAL:
        return virtual_fd(out);
    case REFUSED:
        return -1;
    case MAPPED:
        if ((flags & (O_APPEND | O_RDWR)) && !(flags & O_TRUNC) && rootfs && !strncmp(out, rootfs, strlen(rootfs)))
            copy_up(out + strlen(rootfs), out);
        return real(out, flags, mode);
    default:
        return real(path, flags, mode);
    }
}

#define MODE_ARG(flags)                                                                            \
    mode_t mode = 0;                                                                               \
    if ((flags) & (O_CREAT | O_TMPFILE)) {                                                         \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode = va_arg(ap, mode_t);                                                                 \
        va_end(ap);                                                                                \
    }

int open(const char *path, int flags, ...) {
    MODE_ARG(flags);
    return open_mapped(path, flags, mode, REAL(open));
}

int open64(const char *path, int flags, ...) {
    MODE_ARG(flags);
    return open_mapped(path, flags, mode, REAL(open64));
}

int __open_2(const char *path, int flags) { return open_mapped(path, flags, 0, REAL(open)); }
int __open64_2(const char *path, int flags) { return open_mapped(path, flags, 0, REAL(open64)); }
int creat(const char *path, mode_t mode) { return open_mapped(path, O_CREAT | O_WRONLY | O_TRUNC, mode, REAL(open)); }
int creat64(const char *path, mode_t mode) { return creat(path, mode); }

static int openat_mapped(int dirfd, const char *path, int flags, mode_t mode) {
    if (path && path[0] == '/') /* an absolute path ignores dirfd */
        return open_mapped(path, flags, mode, REAL(open));
    return REAL(openat)(dirfd, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags);
    return openat_mapped(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags);
    return openat_mapped(dirfd, path, flags, mode);
}

int __openat_2(int dirfd, const char *path, int flags) { return openat_mapped(dirfd, path, flags, 0); }
int __openat64_2(int dirfd, const char *path, int flags) { return openat_mapped(dirfd, path, flags, 0); }

static FILE *fopen_mapped(const char *path, const char *mode, FILE *(*real)(const char *, const char *)) {
    char out[PATH_MAX];
    switch (resolve(path, mode_writes(mode), out, 1)) {
    case VIRTUAL: {
        int fd = virtual_fd(out);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        if (!f && fd >= 0)
            close(fd);
        return f;
    }
    case REFUSED:
        return NULL;
    case MAPPED:
        if (strpbrk(mode, "a+") && !strchr(mode, 'w') && rootfs && !strncmp(out, rootfs, strlen(rootfs)))
            copy_up(out + strlen(rootfs), out);
        return real(out, mode);
    default:
        return real(path, mode);
    }
}

FILE *fopen(const char *path, const char *mode) { return fopen_mapped(path, mode, REAL(fopen)); }
FILE *fopen64(const char *path, const char *mode) { return fopen_mapped(path, mode, REAL(fopen64)); }

/* -- calls that take one path ------------------------------------------------------------------ */
/* The path to hand the real call, or NULL (errno set) when the view refuses it. */
static const char *mapped(const char *path, int write, char out[PATH_MAX]) {
    switch (resolve(path, write, out, 0)) {
    case VIRTUAL:
        if (write) {
            errno = EACCES;
            return NULL;
        }
        return out;
    case REFUSED:
        return NULL;
    case MAPPED:
        return out;
    default:
        return path;
    }
}

#define ONE_PATH(ret, name, write, params, ...)                                                    \
    ret name params {                                                                              \
        char out[PATH_MAX];                                                                        \
        const char *p = mapped(path, write, out);                                                  \
        if (!p)                                                                                    \
            return (ret)-1;                                                                        \
        return REAL(name)(__VA_ARGS__);                                                            \
    }

/* For the *at calls: only an absolute path is mapped (it ignores dirfd); -1 when refused. */
static int at_mapped(const char *path, int write, char out[PATH_MAX], const char **use) {
    *use = path;
    if (path && path[0] == '/')
        *use = mapped(path, write, out);
    return *use || !path ? 0 : -1;
}

#define AT_PATH(ret, name, write, params, ...)                                                     \
    ret name params {                                                                              \
        char out[PATH_MAX];                                                                        \
        const char *p;                                                                             \
        if (at_mapped(path, write, out, &p) != 0)                                                  \
            return (ret)-1;                                                                        \
        return REAL(name)(__VA_ARGS__);                                                            \
    }

ONE_PATH(int, stat, 0, (const char *path, struct stat *st), p, st)
ONE_PATH(int, stat64, 0, (const char *path, struct stat64 *st), p, st)
ONE_PATH(int, lstat, 0, (const char *path, struct stat *st), p, st)
ONE_PATH(int, lstat64, 0, (const char *path, struct stat64 *st), p, st)
ONE_PATH(int, access, 0, (const char *path, int how), p, how)
ONE_PATH(int, eaccess, 0, (const char *path, int how), p, how)
ONE_PATH(int, euidaccess, 0, (const char *path, int how), p, how)
ONE_PATH(ssize_t, readlink, 0, (const char *path, char *buf, size_t size), p, buf, size)
ONE_PATH(int, mkdir, 1, (const char *path, mode_t mode), p, mode)
ONE_PATH(int, rmdir, 1, (const char *path), p)
ONE_PATH(int, unlink, 1, (const char *path), p)
ONE_PATH(int, chmod, 1, (const char *path, mode_t mode), p, mode)
ONE_PATH(int, truncate, 1, (const char *path, off_t length), p, length)
ONE_PATH(int, truncate64, 1, (const char *path, off64_t length), p, length)
AT_PATH(int, fstatat, 0, (int dirfd, const char *path, struct stat *st, int flags), dirfd, p, st, flags)
AT_PATH(int, fstatat64, 0, (int dirfd, const char *path, struct stat64 *st, int flags), dirfd, p, st, flags)
AT_PATH(int, statx, 0, (int dirfd, const char *path, int flags, unsigned int mask, struct statx *st), dirfd, p,
        flags, mask, st)
AT_PATH(int, faccessat, 0, (int dirfd, const char *path, int how, int flags), dirfd, p, how, flags)
AT_PATH(ssize_t, readlinkat, 0, (int dirfd, const char *path, char *buf, size_t size), dirfd, p, buf, size)
AT_PATH(int, mkdirat, 1, (int dirfd, const char *path, mode_t mode), dirfd, p, mode)
AT_PATH(int, unlinkat, 1, (int dirfd, const char *path, int flags), dirfd, p, flags)

DIR *opendir(const char *path) {
    char out[PATH_MAX];
    int kind = resolve(path, 0, out, 0);
    if (kind == REFUSED)
        return NULL;
    if (kind == VIRTUAL) {
        errno = ENOTDIR;
        return NULL;
    }
    return REAL(opendir)(kind == MAPPED ? out : path);
}

int rename(const char *from, const char *to) {
    char a[PATH_MAX], b[PATH_MAX];
    const char *p = mapped(from, 1, a), *q = p ? mapped(to, 1, b) : NULL;
    if (!p || !q)
        return -1;
    return REAL(rename)(p, q);
}

int renameat(int fromfd, const char *from, int tofd, const char *to) {
    char a[PATH_MAX], b[PATH_MAX];
    const char *p, *q;
    if (at_mapped(from, 1, a, &p) != 0 || at_mapped(to, 1, b, &q) != 0)
        return -1;
    return REAL(renameat)(fromfd, p, tofd, q);
}
