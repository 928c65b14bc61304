/* status.c — names and messages of the status table and the names of the
 * implementation kinds in quicksilver.h. */
#include "quicksilver.h"

static const char *const names[] = {
#define QS_STATUS_NAME_(code, name, msg) name,
    QS_STATUS_TABLE(QS_STATUS_NAME_)
#undef QS_STATUS_NAME_
};

static const char *const messages[] = {
#define QS_STATUS_MSG_(code, name, msg) msg,
    QS_STATUS_TABLE(QS_STATUS_MSG_)
#undef QS_STATUS_MSG_
};

const char *qs_status_name(int status) {
  if (status < 0 || status >= QS_STATUS_COUNT) return "unknown";
  return names[status];
}

const char *qs_status_message(int status) {
  if (status < 0 || status >= QS_STATUS_COUNT) return "unknown status";
  return messages[status];
}

static const char *const kind_names[] = {
#define QS_IMPL_KIND_NAME_(code, name) name,
    QS_IMPL_KIND_TABLE(QS_IMPL_KIND_NAME_)
#undef QS_IMPL_KIND_NAME_
};

const char *qs_impl_kind_name(qs_impl_kind k) {
  if ((unsigned)k >= QS_IMPL_KIND_COUNT) return "unknown";
  return kind_names[k];
}
