// EdgeLLM for Node.js and HarmonyOS ArkTS: one declaration file for both hosts (the HAR ships a
// copy as src/main/cpp/types/libedgellm_napi/Index.d.ts; scripts/check-napi-ohos.sh keeps the two
// identical). Errors are Error objects whose `code` is the C ABI status name: 'BUSY',
// 'INVALID_ARGUMENT', 'IO', 'INVALID_FILE', 'UNSUPPORTED', 'OUT_OF_MEMORY', 'CONTEXT_FULL',
// 'SHUT_DOWN', 'INTERNAL'. `load` rejects, `generate`'s `result` rejects, synchronous calls throw.

export interface LoadOptions {
  contextSize?: number;       // positions per sequence; 0: the model's training context (at most 4096)
  threads?: number;           // decode threads; 0: the big cores
  batchThreads?: number;      // prefill threads; 0: `threads`
  kvType?: 'f16' | 'f32' | 'q8_0' | 'q4_0';   // K cache type, and V's unless kvTypeV is given
  kvTypeV?: 'f16' | 'f32' | 'q8_0' | 'q4_0';  // V cache type (default: kvType)
  maxQueued?: number;         // requests that may wait for a sequence; beyond: BUSY
  parallel?: number;          // requests decoded at once
  stepTokens?: number;        // most tokens one scheduler step runs
  kvBudgetBytes?: number;     // 0: `parallel` full sequences
  repack?: 'auto' | 'on' | 'off';
  chatTemplate?: string;      // a built-in template name or a file; default: the model's
  pinThreads?: boolean;
  powerMode?: 'performance' | 'balanced' | 'efficiency';
  packDir?: string;           // where pack files are looked for (see pack); '' = never; default: beside the model
}

export interface PackOptions {
  packDir?: string;           // a folder; default: beside the model (an app's install folder is read-only: use its cache folder)
  threads?: number;           // 0 (default): the default count; at most 256
}

export interface GenerateOptions {
  maxTokens?: number;         // < 0: until a stop or the context is full
  temperature?: number;       // 0: greedy
  topK?: number;
  topP?: number;
  minP?: number;
  repeatPenalty?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  penaltyLastN?: number;
  seed?: number;
  stop?: string | string[];
  deadlineMs?: number;        // from the call, queue wait included; <= 0: none
  priority?: 'interactive' | 'background';
  ignoreEos?: boolean;         // never sample end-of-generation tokens (llama.cpp's ignore_eos)
  addSpecial?: boolean;       // raw prompt: add BOS as the model asks (default true)
  parseSpecial?: boolean;     // raw prompt: control-token text becomes the control token
}

export interface Message {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface Timings {
  queueMs: number;
  ttftMs: number;
  prefillMs: number;
  decodeMs: number;
  totalMs: number;
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
}

export interface Result {
  id: number;
  text: string;
  finishReason: 'stop' | 'length' | 'cancelled' | 'timeout';
  stopString: string;
  promptTokens: number;
  completionTokens: number;
  timings: Timings;
  peakRssBytes: number;
}

export interface Generation {
  readonly id: number;                 // 0 when the request was not accepted (result rejects)
  readonly result: Promise<Result>;    // settles after the last onToken call, never before
  cancel(): void;                      // result then resolves with finishReason 'cancelled'
}

export interface Metrics {
  requestsSubmitted: number;
  requestsFinished: number;
  busyRejections: number;
  invalidRequests: number;
  finishedStop: number;
  finishedLength: number;
  cancellations: number;
  timeouts: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
  steps: number;
  stepTokens: number;
  abortedSteps: number;
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
  ttftMsMean: number;
  queueMsMean: number;
  running: number;
  waiting: number;
  kvBlocksUsed: number;
  kvBlocksTotal: number;
  paused: boolean;
  rssBytes: number;
  peakRssBytes: number;
  maxDecodeBatch: number;  // the most requests decoded in one step (1: never batched)
  pausedIdle: boolean;     // paused and the scheduler has seen it: nothing streams until resume()
}

// The library's model description (edgellm_model_info_json, field names as it writes them).
export interface ModelInfo {
  architecture: string;            // 'llama', 'qwen2', 'qwen3'
  n_vocab: number;
  n_ctx_train: number;
  n_embd: number;
  n_layer: number;
  n_head: number;
  n_head_kv: number;
  head_dim: number;
  n_ff: number;
  rope_freq_base: number;
  matrix_parameters: number;
  matrix_types: Record<string, number>;  // weight type -> number of matrices
  weight_bytes: number;
  repacked_bytes: number;
  pack_mapped_tensors: number;     // matrices mapped from a pack file
  pack_file: string;               // 'mapped PATH', 'none at PATH', 'refused: WHY' or 'off'
  n_ctx: number;                   // the memory plan: context, sequences, KV type and block size
  n_parallel: number;
  kv_type: string;                 // K
  kv_type_v: string;
  kv_block_tokens: number;
  n_threads: number;
  n_threads_batch: number;
  memory: MemoryPlan;              // what this configuration adds to the process (docs/device-fitness.md)
}

// The memory formula's terms in bytes (engine/memory_plan.h).
export interface MemoryPlan {
  n_ctx: number;
  n_seq_max: number;
  n_batch: number;
  n_threads: number;
  kv_type: string;                 // K
  kv_type_v: string;
  kv_blocks: number;
  weights_touched_bytes: number;
  weights_repacked_bytes: number;
  weights_mapped_file_bytes: number;
  kv_bytes: number;
  scratch_bytes: number;
  logits_bytes: number;
  tokenizer_bytes: number;
  runtime_bytes: number;
  total_bytes: number;
}

export interface TokenizeOptions {
  addBos?: boolean;
  parseSpecial?: boolean;
}

export declare class Model {
  private constructor();
  generate(input: string | Message[], options?: GenerateOptions, onToken?: (piece: string) => void): Generation;
  tokenize(text: string, options?: TokenizeOptions): number[];
  detokenize(ids: number[]): string;
  info(): ModelInfo;
  metrics(): Metrics;
  pause(): void;
  resume(): void;
  trim(): void;
  warmup(): Promise<void>;
  release(): Promise<void>;
}

export function load(modelPath: string, options?: LoadOptions): Promise<Model>;
// Writes the model's pack file, "<packDir>/<model file name>.x16.pack": its weights in the layout
// this library's kernels use, so later loads (with the same packDir) map it in milliseconds
// instead of repacking (~1 s per GB). About the model's size; written atomically. Runs on a
// worker thread, seconds for a 1-3B model: call it once after installing or updating a model.
// Rejects with 'UNSUPPORTED' where this CPU lacks the kernels for the layouts (nothing to gain).
export function pack(modelPath: string, options?: PackOptions): Promise<void>;
export function version(): string;
