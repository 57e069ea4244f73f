// Moved to base/status.h (the base layer); this forwarding header goes when the includes are
// rewritten (issue 19 part C, step 6).
#pragma once

#include "base/status.h"
