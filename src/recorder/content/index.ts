/** The content store: blobs named by their BLAKE3, where payloads too large for a workflow history live. */
export { BlobCache, type ContentStore, ContentTimings, contentHash, verifyBlob } from './contentStore';
export { atSite, ContentDamagedError, ContentMissingError, type ContentSite } from './errors';
export { CONTENT_DIR, FolderContentStore, type FolderContentStoreOptions } from './folderContentStore';
export { contentStoreFor, contentStoreOfTapeDir } from './fromEnv';
export { type JoinLimits, joinJson, type PieceOptions, type SplitJson, splitJson } from './jsonPieces';
export { MemoryContentStore } from './memoryContentStore';
export { ObjectContentStore, type ObjectContentStoreOptions } from './objectContentStore';
