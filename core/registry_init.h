// ensure_backends_registered: runs register_builtin_backends() exactly once, before any registry use.
#pragma once

namespace tower {
void ensure_backends_registered();
}
