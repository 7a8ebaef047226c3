// placeholder (issue 4, in progress)
#pragma once
