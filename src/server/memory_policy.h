// How the server keeps its RSS near idle after load (docs/server.md, "Memory"). glibc only; a
// no-op with other C libraries. The server is CLI-only (never in libedgellm.so), so setting the
// process's allocator policy is its business.
//
// What was measured (stories260K, 2 concurrent 1 MB /tokenize with pieces, three rounds, RSS
// after each): 20 MB, 119 MB, 212 MB -- and it stayed. The cause is glibc's dynamic mmap
// threshold: blocks above M_MMAP_THRESHOLD (128 KiB at start) are mmapped and unmapped on free,
// but freeing one raises the threshold to its size (up to 32 MiB), so every later multi-MB
// buffer (a request body, the token ids, the tokenizer's working set) comes from the heap of
// the worker thread's arena and stays there when freed. A fixed threshold keeps them mmapped:
// 17 MB after each round (peak 95 MB). What remains -- many small blocks freed in an arena
// whose top is still in use -- is given back by malloc_trim once the server goes idle.
//
// Thread-safety: both any thread.
#pragma once

namespace edgellm::server {

// Fixes M_MMAP_THRESHOLD at 256 KiB for the process (once; later calls do nothing).
void use_serving_allocator_policy();

// Returns the free pages of every arena to the system (malloc_trim(0)). Walks the arenas' free
// lists: well under a millisecond on an idle server; call it when idle, not per request.
void release_free_memory();

}  // namespace edgellm::server
