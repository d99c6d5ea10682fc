/* fl_file.h - checks of files the command-line programs are given
 * (faultline-report, `faultline submit`, `faultline symbols add`). */
#ifndef FL_FILE_H
#define FL_FILE_H

/* Why path cannot serve as a file to read (a --cacert FILE), or NULL when
 * it can: it must be a regular file we may read.  A static string or
 * strerror()'s.  Not signal safe (stat, access, strerror). */
const char *fl_file_problem(const char *path);

#endif /* FL_FILE_H */
