/**
 * `lakelogic/connectors`: every connector, registered for JSON source configs on import.
 * Connector SDKs are optional peer dependencies, loaded only when a connector is used.
 */
export { createSource, registerSource, sourceSpecs, type SourceFactory } from "./registry.js";
export { parseOptions, renderSpecMarkdown, requirePeer, type ComponentSpec, type OptionSpec } from "./spec.js";
export { fileSourceFactory } from "./file.js";
