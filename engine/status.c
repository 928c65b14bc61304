/* status.c — names and messages of the status table in quicksilver.h. */
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

const char *status_name(int status) {
  if (status < 0 || status >= QS_STATUS_COUNT) return "unknown";
  return names[status];
}

const char *status_message(int status) {
  if (status < 0 || status >= QS_STATUS_COUNT) return "unknown status";
  return messages[status];
}
