/* corpus_replay.h - replaying a libFuzzer target's corpus in a unit test
 * (tests/fuzz/corpus/<target>/): every file through the target's entry,
 * each seed (not the "regress-*" crash inputs, kept as they are) also in
 * single-byte mutations, each mutation both whole and truncated at the
 * mutated byte. Header-only; include after <check.h>. */
#ifndef A2A_CORPUS_REPLAY_H
#define A2A_CORPUS_REPLAY_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The file's first MiB, malloc'ed (NULL when it cannot be read). */
static inline uint8_t *a2a_test_slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *b = malloc(1 << 20);
  *n = b ? fread(b, 1, 1 << 20, f) : 0;
  fclose(f);
  return b;
}

/* Replays dir through one() with `mutations` mutations per seed from
 * srand(seed); returns the number of corpus files. */
static inline int a2a_test_replay_corpus(const char *dir, int (*one)(const uint8_t *, size_t),
                                         int mutations, unsigned seed) {
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "no corpus at %s", dir);
  int files = 0;
  srand(seed);
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n = 0;
    uint8_t *b = a2a_test_slurp(path, &n);
    ck_assert_ptr_nonnull(b);
    one(b, n);
    for (int m = 0; m < mutations && n > 1 && strncmp(e->d_name, "regress-", 8); m++) {
      size_t at = (size_t)rand() % n;
      uint8_t old = b[at];
      b[at] = (uint8_t)rand();
      one(b, n);
      one(b, at);
      b[at] = old;
    }
    free(b);
    files++;
  }
  closedir(d);
  return files;
}

#endif
