/* vb-sqlite: INSERT rows into a fresh SQLite database on tmpfs and time it from inside
 * (like Unikraft's SQLite benchmark: 60000 INSERTs).
 *
 * usage: vb-sqlite [rows] [rows_per_transaction]   (defaults 60000, 1 = autocommit)
 * The database goes to the first tmpfs of /dev/shm and /tmp; none is an error (exit 3).
 * Output: sqlite rows=<n> per_txn=<n> dir=<dir> seconds=<s> inserts_per_s=<x>
 * Built against the host's libsqlite3 (dynamic; its libraries go into the artifact). */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define TMPFS_MAGIC 0x01021994

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "vb-sqlite: %s: %s\n", sql, err ? err : "?");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *dirs[2] = { "/dev/shm", "/tmp" };
	long rows = argc > 1 ? atol(argv[1]) : 60000;
	long per = argc > 2 ? atol(argv[2]) : 1;
	const char *dir = NULL;
	char path[256], journal[272];
	sqlite3_stmt *st;
	struct statfs fs;
	sqlite3 *db;
	double t0, t;
	long i;
	int d;

	if (rows < 1 || per < 1) {
		fprintf(stderr, "usage: vb-sqlite [rows >= 1] [rows_per_transaction >= 1]\n");
		return 2;
	}
	for (d = 0; d < 2 && !dir; d++)
		if (statfs(dirs[d], &fs) == 0 && fs.f_type == TMPFS_MAGIC)
			dir = dirs[d];
	if (!dir) {
		fprintf(stderr, "vb-sqlite: neither /dev/shm nor /tmp is a tmpfs here\n");
		return 3;
	}
	snprintf(path, sizeof(path), "%s/vb-sqlite-%ld.db", dir, (long)getpid());
	snprintf(journal, sizeof(journal), "%s-journal", path);
	unlink(path);
	if (sqlite3_open(path, &db) != SQLITE_OK) {
		fprintf(stderr, "vb-sqlite: open %s: %s\n", path, sqlite3_errmsg(db));
		return 1;
	}
	if (exec(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT)") ||
	    sqlite3_prepare_v2(db, "INSERT INTO t (a, b) VALUES (?, ?)", -1, &st, NULL)) {
		unlink(path);
		return 1;
	}
	t0 = now();
	for (i = 0; i < rows; i++) {
		if (per > 1 && i % per == 0 && exec(db, "BEGIN"))
			return 1;
		sqlite3_bind_int64(st, 1, i);
		sqlite3_bind_text(st, 2, "virtbench sqlite row", -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			fprintf(stderr, "vb-sqlite: insert %ld: %s\n", i, sqlite3_errmsg(db));
			unlink(path);
			return 1;
		}
		sqlite3_reset(st);
		if (per > 1 && (i % per == per - 1 || i == rows - 1) && exec(db, "COMMIT"))
			return 1;
	}
	t = now() - t0;
	sqlite3_finalize(st);
	sqlite3_close(db);
	unlink(path);
	unlink(journal);
	printf("sqlite rows=%ld per_txn=%ld dir=%s seconds=%.6f inserts_per_s=%.1f\n", rows, per,
	       dir, t, rows / t);
	return 0;
}
