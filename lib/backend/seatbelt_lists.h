/*
 * Fixed lists of the macOS backend, each entry with the reason it is there.
 * docs/seatbelt.md mirrors them for users. Every list ends with a NULL path.
 */
#ifndef CCSB_BACKEND_SEATBELT_LISTS_H
#define CCSB_BACKEND_SEATBELT_LISTS_H

struct seatbelt_entry {
    const char *path; /* or pattern, see the list */
    const char *why;
};

/* Programs no sandboxed command may start: each one reaches outside the
 * sandbox through a system service, or reads the user's secrets. Literal
 * host paths. A copy elsewhere is caught by the writable-dir exec deny. */
extern const struct seatbelt_entry seatbelt_dangerous_binaries[];

/* Device nodes every program expects to open for writing. */
extern const struct seatbelt_entry seatbelt_writable_devices[];

/* Denials of the log tap that are side effects, not the agent's doing:
 * path = the action ("" for any), why = a substring of the target. */
extern const struct seatbelt_entry seatbelt_log_noise[];

#endif
