//! What [`AclDevice::open`](super::AclDevice::open) is given: the [`AclConfig`] and the
//! [`Library`] to load.

use std::path::PathBuf;

use ascend_cl_sys::{Acl, Search};
use lane_core::Profile;

/// Which library to open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Library {
    /// The search a user's machine runs (`ascend_cl_sys::Search::from_env`):
    /// `RUN_LANE_ACL_LIB`, `ASCEND_HOME_PATH`, `ASCEND_TOOLKIT_HOME`, the default install
    /// prefixes, a bare `dlopen`.
    #[default]
    Search,
    /// This file and nothing else (the fake in tests, a non-standard install).
    Path(PathBuf),
    /// This file and nothing else, with the symbols `hidden` names looked up as absent
    /// (`ascend_cl_sys::Search::hiding`), as an older or trimmed CANN: a hidden required
    /// symbol refuses the open, a hidden optional one degrades what it serves (e.g.
    /// [`NoticeMonitor::Unavailable`](crate::NoticeMonitor::Unavailable)).
    PathHiding {
        /// The library.
        path: PathBuf,
        /// The symbols looked up as absent.
        hidden: Vec<String>,
    },
}

impl Library {
    /// Loads it; `prefer_loaded`: the copy the process already loaded first, if any
    /// (`ascend_cl_sys::Search::prefer_loaded`).
    pub(super) fn load(&self, prefer_loaded: bool) -> Result<Acl, ascend_cl_sys::LoadError> {
        let search = Search::from_env().prefer_loaded(prefer_loaded);
        match self {
            Self::Search => search.open(),
            Self::Path(path) => search.explicit(path).open(),
            Self::PathHiding { path, hidden } => {
                search.explicit(path).hiding(hidden.iter().cloned()).open()
            }
        }
    }
}

/// How to open a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclConfig {
    /// The library.
    pub library: Library,
    /// The logical device id (`aclrtSetDevice`'s argument).
    pub device_id: i32,
    /// The profile to run with; `None` probes `aclrtGetSocName` for it.
    pub profile: Option<Profile>,
    /// Whether to call `aclInit` (the embedding runtime normally owns it; 100002, already
    /// initialised, counts as success).
    pub init: bool,
    /// Whether to install the library's device fault notice monitor (L-19), which takes the
    /// process's one callback slot. Off: the embedding forwards notices with
    /// `lane_driver::report_device_fault`.
    pub notice_monitor: bool,
    /// Use the libascendcl the process already loaded (the runtime's copy), if any, before
    /// `library`, so the lane shares its ACL state
    /// ([`AclDevice::library_path`](super::AclDevice::library_path) names the copy used).
    pub prefer_loaded: bool,
}

impl Default for AclConfig {
    /// The default library search, device 0, the probed profile, no `aclInit`.
    fn default() -> Self {
        Self {
            library: Library::Search,
            device_id: 0,
            profile: None,
            init: false,
            notice_monitor: false,
            prefer_loaded: false,
        }
    }
}
