/**
 * Search attributes that make streams findable in the Temporal UI and CLI, e.g.
 * `temporal workflow list --query "LakeLogicDataset = 'orders' AND LakeLogicState = 'paused'"`.
 * They must be registered on the server (the dev server: `--search-attribute NAME=Keyword`).
 */
export const SEARCH_ATTRIBUTES = {
  LakeLogicStreamKey: "Keyword",
  LakeLogicDataset: "Keyword",
  LakeLogicMode: "Keyword",
  LakeLogicState: "Keyword",
} as const;

export type SearchAttributeName = keyof typeof SEARCH_ATTRIBUTES;
