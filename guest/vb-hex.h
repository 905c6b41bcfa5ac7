/* vb-hex.h: one hex digit's value, for the argv the host sends hex-encoded (vb-init's
 * vb.argv on the kernel command line, vb-agent's requests). */
#ifndef VB_HEX_H
#define VB_HEX_H

static int unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

#endif
