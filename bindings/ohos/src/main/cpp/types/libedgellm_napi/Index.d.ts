// EdgeLLM for Node.js and HarmonyOS ArkTS: one declaration file for both hosts (the HAR ships a
// copy as src/main/cpp/types/libedgellm_napi/Index.d.ts; scripts/check-napi-ohos.sh keeps the two
// identical). One Model is one runtime of the C ABI (edgellm.h): the model and its versions, the
// degradation ladder, sessions, the router and the metrics.
//
// Errors are Error objects whose `code` is the C ABI status name: 'INVALID_ARGUMENT', 'BUSY',
// 'NOT_FOUND', 'IO', 'INVALID_FILE', 'UNSUPPORTED', 'OUT_OF_MEMORY', 'CONTEXT_FULL', 'SHUT_DOWN',
// 'WRONG_THREAD', 'INTERNAL', 'DEGRADED', 'TIMEOUT'. Calls that load, copy, hash or wait (load,
// release, swapModel, embed, rerank, classify, the registry, sessions as bytes or files, plan, pack, warmup,
// trim, openDocQA and every DocQA method) return Promises
// that reject; `generate`'s `result` rejects; quick synchronous calls throw. Nothing blocks the JS
// thread.

export interface LoadOptions {
  contextSize?: number;       // positions per sequence; 0: the model's training context (at most 4096)
  threads?: number;           // decode threads; 0: every core not in the slowest cluster (or the power mode's)
  batchThreads?: number;      // prefill threads; 0: `threads`
  kvType?: 'f16' | 'f32' | 'q8_0' | 'q4_0';   // K cache type, and V's unless kvTypeV is given
  kvTypeV?: 'f16' | 'f32' | 'q8_0' | 'q4_0';  // V cache type (default: kvType)
  maxQueued?: number;         // requests that may wait for a sequence; beyond: BUSY
  parallel?: number;          // requests decoded at once
  stepTokens?: number;        // most tokens one scheduler step runs
  kvBudgetBytes?: number;     // 0: see kvBudgetFraction
  kvBudgetFraction?: number;  // (0, 1]: this fraction of the available memory; 0: `parallel` full sequences
  repack?: 'auto' | 'on' | 'off';
  chatTemplate?: string;      // a built-in template name or a file; default: the model's
  pinThreads?: boolean;
  powerMode?: 'performance' | 'balanced' | 'efficiency';
  packDir?: string;           // where pack files are looked for (see pack); '' = never; default: beside the model
  inputPolicy?: 'refuse' | 'strip';  // invalid UTF-8 / control characters in user text: refuse (default) or strip
  modelVersion?: string;      // the version results name (default '1'; with registryDir the registry's)
  registryDir?: string;       // load(name) then takes a registry name, 'NAME' or 'NAME@VERSION', verified by SHA-256
  maxSessions?: number;       // sessions kept by id (default 16; 0: off)
  maxSessionBytes?: number;   // their total bytes (default 256 MiB)
  linuxPressure?: boolean;    // also read Linux's pressure files (PSI, cgroup, thermal zones) every second
  recoverMs?: number;         // how long the pressure must stay lower before each step back up (default 10000)
  // 'embed': an embedding / reranking model (embed, rerank; generate rejects 'UNSUPPORTED'), as
  // llama-server's --embeddings. An encoder file (BERT family) is one whatever this says; a
  // decoder (Qwen3-Embedding) needs it. For such a model contextSize is the longest input in
  // tokens, embedBatch the tokens per forward (0: max(contextSize, 1024)), and threads,
  // maxQueued, repack, packDir, kvType, inputPolicy, modelVersion apply. Default 'generate'.
  role?: 'generate' | 'embed';
  embedBatch?: number;
  // A draft model for speculation 'draft' (a GGUF with the model's vocabulary, token for token):
  // loaded beside the model, one small draft context per parallel sequence. Absent: none, and
  // requests with speculation 'draft' reject with INVALID_ARGUMENT.
  draftModel?: string;
}

// embed / rerank options (the C ABI's edgellm_embed_params).
export interface EmbedOptions {
  // How an input's token states become its vector: 'model' (default: what the GGUF declares;
  // encoders without a declaration mean, decoders last), 'none' (one vector per token), 'mean',
  // 'cls', 'last'. Not for rerank.
  pooling?: 'model' | 'none' | 'mean' | 'cls' | 'last';
  // llama.cpp's --embd-normalize: -1 none, 0 max-abs to int16 range, 1 taxicab, 2 euclidean
  // (default: unit vectors, so cosine similarity is the dot product), p > 2 the p-norm.
  normalize?: number;
  truncate?: 'refuse' | 'end';  // an input over contextSize tokens: 'INVALID_ARGUMENT' (default) or cut at the end
  deadlineMs?: number;          // queue wait included; <= 0: none; default 30000 ('TIMEOUT' after it)
  priority?: 'interactive' | 'background' | 0 | 1;
}

export interface RerankOptions extends EmbedOptions {
  topN?: number;                // results keeps the best topN (0 / absent: all); scores keeps every document
}

export interface EmbedResult {
  // One Float32Array per text, in order (per token with pooling 'none': text i's tokens[i] rows
  // after text i-1's), all views over one ArrayBuffer (vectors[0].buffer).
  vectors: Float32Array[];
  dims: number;
  pooling: 'none' | 'mean' | 'cls' | 'last';  // what ran
  tokens: number[];             // per text: tokens run (after truncation)
  truncated: number;            // texts cut to fit (truncate 'end')
  promptTokens: number;         // tokens run in all (OpenAI's usage)
  totalMs: number;
}

export interface RerankResult {
  scores: number[];             // one per document, in document order (the cross-encoder's logit; higher is more relevant)
  results: RerankEntry[];       // best first, topN of them
  tokens: number[];             // per document: tokens of its (query, document) pair
  truncated: number;
  promptTokens: number;
  totalMs: number;
}

// classify options (the C ABI's edgellm_classify_params).
export interface ClassifyOptions {
  instruction?: string;         // chat mode: the system message (default: one naming the labels); raw: put before the text
  raw?: boolean;                // no chat template: instruction + text as the prompt (put the " " in the labels)
  lengthNormalize?: boolean;    // softmax over the mean log-prob per token instead of the sum
  deadlineMs?: number;          // default 30000; <= 0: none
}

export interface ClassifyResult {
  label: string;                // labels[index]: always one of the labels
  index: number;
  probabilities: number[];      // per label, in label order, summing to 1
  logprobs: number[];           // per label: its tokens' summed log-probability (natural log)
  labelTokens: number[];        // per label: its tokens
  promptTokens: number;
  cachedTokens: number;         // of promptTokens, taken from the KV prefix cache (not prefilled)
  totalMs: number;
}

export interface RerankEntry {
  index: number;                // into documents
  relevanceScore: number;
}

// What info() returns for an embedding model (role 'embed'): `m.info() as EmbedderInfo`.
export interface EmbedderInfo {
  role: 'embed';
  architecture: string;         // 'bert', or a decoder such as 'qwen3'
  n_vocab: number;
  n_ctx_train: number;
  n_embd: number;
  n_layer: number;
  dims: number;                 // floats per vector
  pooling: string;              // the model's pooling ('mean', 'cls', 'last', 'rank')
  can_rerank: boolean;          // a classification head: rerank works
  n_ctx: number;                // the longest input in tokens
  n_batch: number;              // tokens per forward
  weight_bytes: number;
  model_version: string;
  input_policy: 'refuse' | 'strip';
}

export interface PackOptions {
  packDir?: string;           // a folder; default: beside the model (an app's install folder is read-only: use its cache folder)
  threads?: number;           // 0 (default): the default count; at most 256
}

export interface LogitBias {
  token: number;              // a token id of the model
  bias: number;               // added to its logit: [-100, 100], or -Infinity to ban the token
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
  logitBias?: LogitBias[];    // at most 4096
  stop?: string | string[];
  deadlineMs?: number;        // from the call, queue wait included; <= 0: none
  priority?: 'interactive' | 'background' | 0 | 1;
  ignoreEos?: boolean;        // never sample end-of-generation tokens (llama.cpp's ignore_eos)
  addSpecial?: boolean;       // raw prompt: add BOS as the model asks (default true)
  parseSpecial?: boolean;     // raw prompt: control-token text becomes the control token
  contextShift?: boolean;     // endless stream: drop the older half of the window when the context is full
  nKeep?: number;             // with contextShift: positions never dropped (default 4; -1: the whole prompt)
  sessionId?: string;         // continue from / keep this request's KV under an id (1-64 of A-Z a-z 0-9 _ - .)
  sessionLoadPath?: string;   // continue from a session file (read and checked when generate is called)
  sessionSavePath?: string;   // write this request's KV to a file when it ends (result.sessionSaveError says if not)
  route?: 'off' | 'auto' | 'local' | 'cloud';  // the router (setRouter); default 'off'
  // Constrained output (docs/structured-output.md), at most one: a GBNF grammar (llama.cpp's
  // format), a JSON Schema (an object, or its JSON text), or any JSON object.
  grammar?: string;
  jsonSchema?: object | string;
  jsonObject?: boolean;
  // Tool calling (docs/c-api.md "Tool calls"; messages input only): OpenAI function tools (an
  // array, or its JSON text); the template renders them, a call's arguments follow its tool's
  // parameters schema, and result.toolCalls holds the parsed calls (finishReason 'tool_calls').
  // toolChoice: 'auto' (default) | 'none' (text, tools not rendered) | 'required' (one or more
  // calls) | a named function (exactly one call of it). Bad tools reject with INVALID_ARGUMENT.
  tools?: ToolDefinition[] | string;
  toolChoice?: 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };
  parallelToolCalls?: boolean;  // more than one call in a reply; default true
  // Speculative decoding (docs/speculative-decoding.md "In the service"): 'ngram' drafts up to
  // draftMax tokens (1-8, default 8) from the prompt and the text so far and checks them in one
  // forward; the text is exactly that of 'off' (default). With a grammar or tools it does not
  // speculate (result.speculation.offReason says why); 'draft' drafts with the model's draftModel
  // (LoadOptions; INVALID_ARGUMENT when it was loaded without one), as does draftMax outside 1-8.
  speculation?: 'off' | 'ngram' | 'draft';
  draftMax?: number;
}

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: object };
}

// A call parsed from the reply: arguments is the JSON text of its arguments object (OpenAI's
// function.arguments); it follows the tool's parameters schema.
export interface ToolCall {
  id: string;                 // 'call_' + 24 letters and digits
  name: string;
  arguments: string;
}

// A streamed piece of a request with tools (onToken's second argument; absent without tools):
// the piece split as edgellm serve streams it. content is the text outside calls that became
// certain (text that may still open a call is held back), toolCalls the call pieces that did,
// in OpenAI's delta.tool_calls shape: a call's first piece carries its id (the one
// result.toolCalls gives) and name, later ones append to its arguments' JSON text. The last
// onToken call may have an empty piece and release the rest.
export interface ToolStreamEvent {
  content: string;
  toolCalls: ToolCallDelta[];
}

export interface ToolCallDelta {
  index: number;              // which call of the reply (0-based)
  id: string;                 // on the call's first piece, else ''
  name: string;               // on the call's first piece, else ''
  arguments: string;          // more of the arguments' JSON text
}

// A turn of a chat. A tool-call follow-up (docs/harmonyos.md, docs/c-api.md "Tool calls"): the
// assistant turn that called tools carries its calls (result.toolCalls as they are; content:
// result.content, '' when it only called), and each tool turn the id of the call whose result
// its content is. A tool turn whose toolCallId no earlier call has, or arguments that are not a
// JSON object, reject with INVALID_ARGUMENT.
export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;            // (from JS, null or absent is read as '' on a turn with toolCalls)
  toolCalls?: ToolCall[];     // assistant: the calls it made
  toolCallId?: string;        // tool: the id of the call this result answers
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

// What the router did with a routed request.
export interface RouteInfo {
  route: 'local' | 'local-low-confidence' | 'cloud';
  reason: string;             // why, in words ("low confidence; answered by the cloud")
  tier: string;               // the cloud tier that answered ('small', 'large'), '' when local
  score: number;              // the local answer's confidence (geometric mean of token probabilities); -1 without one
  meanP: number;
  minP: number;
  latencyMs: number;
  retryInCloud: boolean;      // low confidence: the same request with route 'cloud' may help
}

export interface Result {
  id: number;
  text: string;
  finishReason: 'stop' | 'length' | 'cancelled' | 'timeout' | 'tool_calls';
  stopString: string;
  promptTokens: number;
  cachedTokens: number;       // of promptTokens, taken from the KV cache or a session (not prefilled)
  completionTokens: number;
  sanitizedChars: number;     // characters inputPolicy 'strip' replaced or removed
  kvBlocks: number;
  timings: Timings;
  peakRssBytes: number;
  modelVersion: string;       // the version that served it ('cloud:MODEL' when the cloud answered)
  route: RouteInfo | null;    // null when not routed
  sessionStored: boolean;     // sessionId: the KV is kept under it now
  sessionSaveError: string | null;  // sessionSavePath: null when written (or not asked), else the code
  content: string;            // text outside the tool calls (without tools: text)
  toolCalls: ToolCall[];      // the reply's tool calls ([] without tools or calls)
  speculation: SpeculationStats;
}

// Speculative decoding's counters of one request: the decode phase's forward passes and the
// tokens sampled from them (tokensPerForward: 1 without speculation), drafted and kept tokens.
export interface SpeculationStats {
  drafted: number;
  accepted: number;
  forwards: number;
  verifyForwards: number;     // of forwards, those that carried drafts
  forwardTokens: number;
  acceptanceRate: number;     // accepted / drafted (0 without drafts)
  tokensPerForward: number;
  offReason: string;          // why a request that asked for speculation did not ('' otherwise)
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
  paused: boolean;
  rssBytes: number;
  peakRssBytes: number;
  kvBlocksUsed: number;
  kvBlocksCached: number;
  kvBlocksFree: number;
  kvBlocksTotal: number;
  kvPoolBytes: number;
  promptTokensCached: number;
  prefixHitRate: number;
  kvFragmentation: number;
  kvEvictions: number;
  threads: number;            // decode threads
  batchThreads: number;       // prefill threads
  threadPriorityDenied: number;
  modelSwaps: number;         // versions switched in (swapModel, reloadRegistry, the ladder)
  degradationRung: number;    // 0 normal .. 6 ending running requests
  degradationSteps: number;
  degradedRefusals: number;
  degradedEndings: number;
  routedLocal: number;
  routedLowConfidence: number;
  routedCloud: number;
  cloudFailures: number;
  privacyBlocks: number;
  failureFallbacks: number;
  sessions: number;
  sessionBytes: number;
  maxDecodeBatch: number;  // the most requests decoded in one step (1: never batched)
  pausedIdle: boolean;     // paused and the scheduler has seen it: nothing streams until resume()
}

// The library's model description (edgellm_model_info_json, field names as it writes them).
export interface ModelInfo {
  role: 'generate';                // an embedding model's info() is an EmbedderInfo
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
  n_threads: number;               // decode threads
  n_threads_batch: number;         // prefill threads
  model_version: string;           // the version serving new requests
  input_policy: 'refuse' | 'strip';
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
  draft_bytes: number;             // a draft model's weights and its own context (0 without one)
  total_bytes: number;
}

export interface TokenizeOptions {
  addBos?: boolean;
  parseSpecial?: boolean;
}

export interface DetokenizeOptions {
  renderSpecial?: boolean;         // control tokens as their text
}

export interface TemplateOptions {
  addGenerationPrompt?: boolean;   // default true
}

export interface WarmupResult {
  ran: boolean;
  reason: string;                  // why it was skipped ('' when it ran)
}

// The platform's pressure (HarmonyOS: onMemoryLevel, thermal and power-save callbacks). Absent
// fields are 0 / false: each call gives the whole picture.
export interface Pressure {
  memoryLevel?: number;            // 0 none, 1 moderate, 2 high, 3 critical, 4 free memory now
  thermalLevel?: number;           // 0 none, 1 warm, 2 hot, 3 critical
  powerSave?: boolean;
}

export interface RungState {
  entered: number;
  left: number;
  last_reason: string;
}

// The degradation ladder (edgellm_degradation_json).
export interface Degradation {
  rung: number;                    // 0 normal .. 6
  rung_name: string;
  target: number;
  applied_rung: string;            // the configuration in force
  rungs: Record<string, RungState>;
  steps: number;
  model_version: string;
  planned_bytes?: number;
  n_ctx: number;
  n_threads: number;
  n_threads_batch: number;
  decode_placement: string;
  kv_type: string;
  kv_type_v: string;
  refused_requests: number;
  ended_requests: number;
  apply_failures: number;
  last_apply_error?: string;
  signals: string;
}

// One call of the router to the cloud: an OpenAI chat-completions POST the transport makes.
export interface CloudCall {
  tier: string;                    // 'small' or 'large': which endpoint
  model: string;                   // the model name the body asks for
  body: string;                    // the request JSON
}

// The transport's answer: the HTTP status and body, or why there is none.
export interface CloudReply {
  status?: number;                 // 100..599; the router reads 200 as an answer
  body?: string | ArrayBuffer | Uint8Array;
  error?: string;                  // set: no answer (connection refused, certificate rejected, ...)
}

export type CloudTransport = (call: CloudCall) => Promise<CloudReply> | CloudReply;

export interface RouterOptions {
  localThreshold?: number;         // answer locally at a confidence >= this (default 0.85)
  cloudThreshold?: number;         // ask the cloud below this (default 0.6)
  privacy?: boolean;               // never call the cloud (the transport is never called)
  verbatimTurns?: number;          // user turns sent verbatim, older ones as a local summary (default 3)
  cloudTimeoutMs?: number;         // a call not answered by then counts as failed (default 30000)
  cloudOnFailure?: boolean;        // a failed local run (memory, degraded, context full) goes to the cloud (default true)
  cloudModel?: string;             // the 'small' tier's model name
  cloudModelLarge?: string;        // the 'large' tier's; absent: no second tier
  summaryMaxTokens?: number;       // the local summary of older turns (default 128)
  transport?: CloudTransport | null;  // absent / null: no cloud (routed requests are answered locally)
}

export interface SessionEntry {
  id: string;
  bytes: number;
}

export interface SessionList {
  sessions: SessionEntry[];        // most recently used first
  bytes: number;
  max_sessions: number;
  max_bytes: number;
}

export interface ModelManifest {
  name: string;
  version: string;
  file: string;
  size_bytes: number;
  sha256: string;
  weight_type: string;
  tier: string;
  prefill_tokens_per_second: number;
  decode_tokens_per_second: number;
  task_score: number | null;
  source: string;
}

export interface RegistryModel extends ModelManifest {
  current: boolean;                // the version new loads of `name` use
  path: string;
}

export interface RegistryListing {
  models: RegistryModel[];
  unfit: string[];                 // configurations that crashed here (not chosen by plan)
}

export interface InstallOptions {
  name: string;                    // 1-64 of A-Z a-z 0-9 . _ -
  version: string;
  sha256?: string;                 // 64 hex digits to verify against; absent: the file's digest is recorded
  move?: boolean;                  // rename the downloaded file into the registry instead of copying it
}

export interface PlanRequest {
  device?: string | Record<string, Object>;  // 'this' | 'phone-4gb' | 'phone-8gb' | 'phone-12gb' | 'phone-16gb' | a profile
  models?: string[];
  registry?: string;
  max_ctx?: number;
  min_ctx?: number;
  n_parallel?: number;
  headroom?: number;
  power_mode?: 'performance' | 'balanced' | 'efficiency';
  min_decode_tokens_per_second?: number;
  draft_model?: string;            // a speculative-decoding draft model counted beside each candidate
}

export interface PlanThreads {
  prefill: number;
  decode: number;
  decode_on_efficiency_cores: boolean;
  prefill_placement: string;
  decode_placement: string;
}

export interface PlanOption {
  model: string;
  path: string;
  weight_type: string;
  fits: boolean;
  rejected?: string;
  n_ctx?: number;
  kv_type?: string;
  kv_type_v?: string;
  n_batch?: number;
  guard_key?: string;
  memory?: MemoryPlan;
}

export interface Plan {
  headroom: number;
  budget_bytes: number;
  power_mode: string;
  threads: PlanThreads;
  choice: PlanOption | null;       // null: nothing fits
  considered: PlanOption[];
}

export declare class Model {
  private constructor();
  generate(input: string | Message[], options?: GenerateOptions,
           onToken?: (piece: string, tools?: ToolStreamEvent) => void): Generation;
  // An embedding model (role 'embed'): vectors for one text or many (up to 2048; they share
  // forwards with other callers' texts), on a worker thread. Rejects 'UNSUPPORTED' on a
  // generation model, 'INVALID_ARGUMENT' for no text, an empty one, invalid UTF-8 / control
  // characters (inputPolicy 'refuse'), one over contextSize tokens (truncate 'refuse'), 'BUSY',
  // 'TIMEOUT', 'SHUT_DOWN'.
  embed(texts: string | string[], options?: EmbedOptions): Promise<EmbedResult>;
  // A reranker (a cross-encoder: info().can_rerank): each document scored for query.
  rerank(query: string, documents: string[], options?: RerankOptions): Promise<RerankResult>;
  // A generation model: one of 1..64 distinct labels for text by the model's log-probability of
  // each as the answer (queued with the generations; the prompt's prefix from the prefix cache,
  // the labels sharing its KV), on a worker thread. Rejects 'INVALID_ARGUMENT' (no / repeated /
  // empty / over-long labels, empty text, a prompt over contextSize, wrong types), 'UNSUPPORTED'
  // on an embedding model, 'BUSY' (the queue is full), 'OUT_OF_MEMORY' (the KV pool is smaller
  // than the call needs), 'DEGRADED', 'TIMEOUT', 'SHUT_DOWN'.
  classify(text: string, labels: string[], options?: ClassifyOptions): Promise<ClassifyResult>;
  tokenize(text: string, options?: TokenizeOptions): number[];
  detokenize(ids: number[], options?: DetokenizeOptions): string;
  applyTemplate(messages: Message[], options?: TemplateOptions): string;
  info(): ModelInfo;
  metrics(): Metrics;
  metricsJson(): Record<string, Object>;   // everything, with histograms, the ladder, the router
  metricsPrometheus(): string;
  pause(): void;
  resume(): void;
  trim(): Promise<number>;                 // bytes released
  warmup(): Promise<WarmupResult>;
  // Hot swap: loads modelPath (a verified registry path, say) as `version`; new requests go to
  // it, admitted ones finish on the old model; a failure changes nothing.
  swapModel(modelPath: string, version: string): Promise<void>;
  // Loaded with registryDir: switches to the registry's current version (a rollback is
  // registrySetCurrent + reloadRegistry). Resolves with the version serving afterwards.
  reloadRegistry(): Promise<string>;
  setPressure(pressure: Pressure): void;
  setFallbackModel(modelPath: string | null, version?: string): Promise<void>;
  degradation(): Degradation;
  setRouter(options: RouterOptions): void;
  exportSession(id: string): Promise<ArrayBuffer | null>;         // null: none kept under id
  importSession(id: string, data: ArrayBuffer | Uint8Array): Promise<number>;  // the positions it holds
  deleteSession(id: string): boolean;
  listSessions(): SessionList;
  loadSessionFile(id: string, path: string): Promise<number>;
  saveSessionFile(id: string, path: string): Promise<boolean>;    // false: none kept under id
  release(): Promise<void>;
}

// ---- document Q&A ("ask my notes", the C ABI's edgellm_docqa_*; docs/docqa.md): documents are
// chunked, embedded by an embedding Model into a local index file (exact cosine search), the
// nearest chunks optionally reordered by a reranker, and a generation Model answers from them
// citing the chunk ids it used. Nothing leaves the device.
export interface DocQAOptions {
  embedder: Model;            // role 'embed' (an embedding model)
  reranker?: Model | null;    // a cross-encoder (info().can_rerank) that reorders the candidates
  generator?: Model | null;   // writes answers (ask); without one, ask rejects 'UNSUPPORTED'
  indexPath: string;          // the index file (a new, empty index when absent; written at each change)
  chunkTokens?: number;       // tokens per chunk; 0 (default): min(256, the embedder's context - 2)
  overlapTokens?: number;     // tokens a chunk repeats of the previous one (default 32)
  topK?: number;              // chunks an answer is generated from, and search's default (4)
  candidates?: number;        // chunks the reranker reorders (16)
  maxAnswerTokens?: number;   // default 256
  vectors?: 'int8' | 'f16';   // for a new index (default 'int8': dims + 4 bytes per chunk)
  truncate?: 'refuse' | 'end';  // a chunk or question longer than the embedder's context (default 'end')
  queryPrefix?: string;       // put before a question when it is embedded (bge English v1.5 wants one)
  rebuild?: boolean;          // start empty, replacing the file at the first change (after 'INVALID_FILE')
}

export interface DocQAReport {
  added: number; updated: number; removed: number; unchanged: number; skipped: number;  // documents
  chunksAdded: number; chunksRemoved: number; tokensEmbedded: number;
  documents: number; chunks: number;  // in the index afterwards
  memoryBytes: number;                // the index's estimated heap
  seconds: number;
}

export interface DocQAHit {
  chunk: number;         // the chunk id (never reused: what citations name)
  key: string;           // its document's key (indexFolder: the path relative to the folder)
  begin: number;         // the chunk's byte range in the document's UTF-8 text
  end: number;
  text: string;
  score: number;         // cosine with the question
  rerankScore?: number;  // with a reranker: its score (the order)
}

export interface DocQATimings { embedMs: number; searchMs: number; rerankMs: number; generateMs: number; }

export interface DocQASearchResult {
  hits: DocQAHit[];      // best first
  timings: DocQATimings;
}

export interface DocQAAnswer {
  answer: string;
  finishReason: 'stop' | 'length' | 'timeout' | 'error';
  error?: string;        // finishReason 'error'
  citations: number[];   // chunk ids the answer cites ([12] markers naming a chunk of context), in order
  context: DocQAHit[];   // the chunks the generator was given, best first
  timings: DocQATimings;
}

export interface DocQAListing {
  documents: { key: string; bytes: number; chunks: number }[];
  chunks: number; dims: number; vectors: 'int8' | 'f16'; model: string; memoryBytes: number;
}

// One index. Calls take turns (each runs on a worker thread; a second waits for the first); a
// Model it uses that is released makes later calls reject 'SHUT_DOWN' (release() waits for a call
// in flight). Errors: 'INVALID_ARGUMENT' (an empty text, invalid UTF-8 under the embedder's
// inputPolicy 'refuse', an empty index, a bad key), 'NOT_FOUND' (remove), 'IO', the models'
// 'BUSY' / 'DEGRADED'.
export declare class DocQA {
  private constructor();
  // Adds text under key (an app's note id: 1 to 4096 bytes, no control characters), or replaces
  // the document there when the text changed (new chunk ids); saves the index file atomically.
  add(key: string, text: string): Promise<DocQAReport>;
  remove(key: string): Promise<DocQAReport>;   // then saves; 'NOT_FOUND' when absent
  // Every .txt / .md / .markdown file under dir (keys: relative paths): new added, changed
  // re-embedded, vanished removed (with documents add()ed under other keys); one save.
  indexFolder(dir: string): Promise<DocQAReport>;
  search(query: string, options?: { topK?: number }): Promise<DocQASearchResult>;
  ask(question: string): Promise<DocQAAnswer>;  // 'UNSUPPORTED' without a generator
  list(): Promise<DocQAListing>;
  close(): void;  // later calls reject; the index's memory goes when the calls in flight end
}

// Opens (or creates) the index file. 'INVALID_FILE': a corrupt file, refused whole with the reason
// (nothing on disk changed: restore '<indexPath>.bak', or open with rebuild and add the documents
// again); 'INVALID_ARGUMENT': an index built with another embedding model, a Model of the wrong role.
export function openDocQA(options: DocQAOptions): Promise<DocQA>;

export function load(modelPath: string, options?: LoadOptions): Promise<Model>;
// Writes the model's pack file, "<packDir>/<model file name>.x16.pack": its weights in the layout
// this library's kernels use, so later loads (with the same packDir) map it in milliseconds
// instead of repacking (~1 s per GB). About the model's size; written atomically. Runs on a
// worker thread, seconds for a 1-3B model: call it once after installing or updating a model.
// Rejects with 'UNSUPPORTED' where this CPU lacks the kernels for the layouts (nothing to gain).
export function pack(modelPath: string, options?: PackOptions): Promise<void>;
// The model registry: install a file the app downloaded (verified by SHA-256, atomic), resolve a
// verified path, list, roll back (set the current version), remove an old version.
export function registryInstall(registryDir: string, filePath: string, options: InstallOptions): Promise<ModelManifest>;
export function registryResolve(registryDir: string, nameOrKey: string): Promise<string>;
export function registryList(registryDir: string): Promise<RegistryListing>;
export function registrySetCurrent(registryDir: string, name: string, version: string): Promise<void>;
export function registryRemove(registryDir: string, name: string, version: string): Promise<void>;
// Which model and configuration fit a device, with the memory arithmetic.
export function plan(request: PlanRequest): Promise<Plan>;
export function version(): string;
export function abiVersion(): number;
