/* A session library with a use-after-free: `session_name` reads a closed session.
 *
 * `session_close` frees the session; the caller keeps using the pointer. glibc's
 * tcache writes only the first 16 bytes of a freed chunk (its list link and key),
 * so `name` (at offset 16) survives and the read "works". With MALLOC_PERTURB_ set
 * (and the tcache off, which would keep the chunk unperturbed), free fills the chunk
 * with the perturb byte, `name` becomes 0xa5a5... and strlen faults.
 */
#include <stdlib.h>
#include <string.h>

struct session {
    long id;
    long refs;
    const char *name;
    char buffer[40];
};

struct session *session_open(long id) {
    struct session *s = malloc(sizeof *s);
    if (s == NULL) return NULL;
    s->id = id;
    s->refs = 1;
    strcpy(s->buffer, "worker");
    s->name = s->buffer;
    return s;
}

void session_close(struct session *s) { free(s); }

size_t session_name_length(const struct session *s) { return strlen(s->name); }
