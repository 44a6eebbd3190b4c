/**
 * The sizes the planner plans at: a replacement's frame, a mask stub, the least an emergency cut leaves, the summary's
 * frame and its share of the window, and the first task ledger a summary brings.
 */

/** Tokens a marker, stub or preview frame adds (an upper bound: about 100 characters). */
export const STUB_TOKENS = 40;
/** Tokens a mask stub is planned at: the stub and the error lines and paths it keeps (`REPORTED_CHARS`, apply.ts). */
export const MASK_TOKENS = STUB_TOKENS + 100;
/**
 * Tokens a superseded result's marker is planned at: what it names (the tool, the newer result's id, the stored
 * original's key) in about 300 characters.
 */
export const SUPERSEDED_TOKENS = 80;
/** The emergency step leaves at least this many tokens of a message it cuts. */
export const EMERGENCY_MIN_TOKENS = 256;
/** Tokens the summary's own frame adds: its header, what it covers, where the loop stands, the removed ids. */
export const SUMMARY_FRAME_TOKENS = 160;
/** The summary message is at most this share of the window (a small window cannot hold a 2,000-token summary). */
export const SUMMARY_WINDOW_SHARE = 0.15;
/**
 * Tokens the task ledger's message is planned at when a plan's summary makes the first one: its header and sections,
 * besides the goal (the user's first message, up to {@link GOAL_PLAN_TOKENS}). Later summaries replace it in place.
 */
export const LEDGER_FRAME_TOKENS = 64;
/** The goal's tokens in the first ledger, at most (the ledger keeps its first 1,000 characters). */
export const GOAL_PLAN_TOKENS = 250;
