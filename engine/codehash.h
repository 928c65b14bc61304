/* codehash.h — the build-time hash of each built-in method's code
 * (engine/codehash.py writes the table). */
#ifndef QS_CODEHASH_H
#define QS_CODEHASH_H

#include <stdint.h>

typedef struct code_hash {
  const char *method;
  uint32_t hash; /* 31 bits; 0 ends the table with method NULL */
} code_hash;

extern const code_hash code_hashes[];

#endif
