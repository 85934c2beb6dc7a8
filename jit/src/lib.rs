//! rtgrind-jit: the engine. It decodes guest x86-64 blocks, copies them into a code cache with
//! their control transfers rewritten, links blocks together and switches between host and
//! guest state. It knows nothing of Linux policy or of what tools do with the hooks it offers.

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod cache;
pub mod claims;
pub mod context;
pub mod cpuid;
pub mod dispatch;
pub mod emit;
pub mod image;
pub mod instrument;
pub mod persist;
pub mod profile;
mod templates;
pub mod translate;

pub use cache::{BlockId, CodeCache, ExitId, ExitKind, Fixup};
pub use context::ThreadContext;
pub use iced_x86;
pub use image::BlockImage;
pub use translate::{translate, translate_limited, CodeSource, TranslateError};
