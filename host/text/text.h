/*
 * text.h: string distance and "did you mean" for the CLI, config keys and adapter names.
 *
 * The distance is Damerau-Levenshtein in its optimal-string-alignment form (insert, delete,
 * substitute, swap two adjacent bytes; no substring is edited twice), over bytes: a multi-byte
 * UTF-8 character counts as several bytes. Neither function keeps state or takes a lock.
 */
#ifndef ZV_TEXT_H
#define ZV_TEXT_H

#include <stddef.h>

/*
 * Words whose shorter side is at most 64 bytes are compared with 64-bit vectors and need no
 * scratch. Longer ones use three rows of cells: up to this many cells a row on the stack, one
 * heap scratch above it.
 */
#define ZV_TEXT_STACK_CELLS 256

typedef struct {
  const char *s;
  size_t len;
} zv_text_str_t;

/*
 * Stores the OSA distance between a[0..alen) and b[0..blen) in *out. Allocates only when the
 * shorter input, after common prefix and suffix are removed, is longer than
 * ZV_TEXT_STACK_CELLS - 1 bytes, and frees it before returning. Returns 0 or ZV_ENOMEM.
 */
int zv_text_distance(const char *a, size_t alen, const char *b, size_t blen, size_t *out);

/* The largest distance at which a word of this length still gets a suggestion: 2, or 3 above 8. */
size_t zv_text_threshold(size_t len);

/*
 * Finds the candidate closest to word, at distance <= max_dist. On a tie the earliest candidate
 * wins. Stores its position in *index and its distance in *dist (either may be NULL) and returns
 * 0; returns ZV_ENOTFOUND when no candidate is close enough, ZV_ENOMEM when a scratch above the
 * stack cap cannot be had. One scratch serves the whole scan.
 */
int zv_text_closest(const char *word, size_t len, const zv_text_str_t *cands, size_t ncands,
                    size_t max_dist, size_t *index, size_t *dist);

#endif
