/* vb-stream: the four STREAM kernels (McCalpin), written for virtbench, one thread.
 *
 *   copy  c = a          16 bytes moved per element
 *   scale b = s * c      16
 *   add   c = a + b      24
 *   triad a = b + s * c  24
 *
 * usage: vb-stream [elements] [times]   (defaults 16777216 = 128 MiB per array, 10)
 * Each kernel runs `times` times; like STREAM, the first pass is not counted and the best
 * rate is reported. Output, one line per kernel:
 *   stream <kernel> best_mb_s=<MB/s> avg_mb_s=<MB/s> min_s=<s>
 * (MB = 10^6 bytes). Exit 1 if the results do not verify, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 16777216L;
	int times = argc > 2 ? atoi(argv[2]) : 10;
	static const char *names[4] = { "copy", "scale", "add", "triad" };
	static const double bytes[4] = { 16, 16, 24, 24 };
	double best[4], sum[4], t;
	const double s = 3.0;
	double *a, *b, *c;
	long i;
	int k, r;

	if (n < 1000 || times < 2) {
		fprintf(stderr, "usage: vb-stream [elements >= 1000] [times >= 2]\n");
		return 2;
	}
	a = malloc(n * sizeof(double));
	b = malloc(n * sizeof(double));
	c = malloc(n * sizeof(double));
	if (!a || !b || !c) {
		fprintf(stderr, "vb-stream: cannot allocate 3 x %ld doubles\n", n);
		return 2;
	}
	for (i = 0; i < n; i++) {
		a[i] = 1.0;
		b[i] = 2.0;
		c[i] = 0.0;
	}
	for (k = 0; k < 4; k++) {
		best[k] = 1e30;
		sum[k] = 0;
	}
	for (r = 0; r < times; r++) {
		double d[4];

		t = now();
		for (i = 0; i < n; i++)
			c[i] = a[i];
		d[0] = now() - t;
		t = now();
		for (i = 0; i < n; i++)
			b[i] = s * c[i];
		d[1] = now() - t;
		t = now();
		for (i = 0; i < n; i++)
			c[i] = a[i] + b[i];
		d[2] = now() - t;
		t = now();
		for (i = 0; i < n; i++)
			a[i] = b[i] + s * c[i];
		d[3] = now() - t;
		if (r == 0)
			continue;
		for (k = 0; k < 4; k++) {
			sum[k] += d[k];
			if (d[k] < best[k])
				best[k] = d[k];
		}
	}
	/* verify: follow the same recurrence on scalars */
	{
		double ea = 1.0, eb = 2.0, ec = 0.0;

		for (r = 0; r < times; r++) {
			ec = ea;
			eb = s * ec;
			ec = ea + eb;
			ea = eb + s * ec;
		}
		for (i = 0; i < n; i += n / 97 + 1) {
			if (a[i] != ea || b[i] != eb || c[i] != ec) {
				fprintf(stderr, "vb-stream: results do not verify at %ld\n", i);
				return 1;
			}
		}
	}
	for (k = 0; k < 4; k++)
		printf("stream %s best_mb_s=%.1f avg_mb_s=%.1f min_s=%.6f\n", names[k],
		       bytes[k] * n / best[k] / 1e6, bytes[k] * n / (sum[k] / (times - 1)) / 1e6,
		       best[k]);
	return 0;
}
