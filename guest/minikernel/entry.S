/*
 * vb-minikernel entry: the PVH boot protocol (Xen's XEN_ELFNOTE_PHYS32_ENTRY), which QEMU
 * (-kernel), Firecracker and Cloud Hypervisor all load. The VMM starts us in 32-bit
 * protected mode, paging off, with %ebx = physical address of the hvm_start_info. We map
 * the first GiB 1:1 with 2 MiB pages, enter long mode and call kmain(start_info) with no
 * FPU/SSE state touched, so it also runs where the VMM or a nested hypervisor offers no
 * XSAVE (the PVM KVM of these machines).
 */

#define XEN_ELFNOTE_PHYS32_ENTRY 18

	.section .note.Xen, "a"
	.p2align 2
	.long 4				/* name size: "Xen\0" */
	.long 4				/* descriptor size */
	.long XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.long pvh_start

	.section .text.boot, "ax"
	.code32
	.globl pvh_start
pvh_start:
	cli
	cld
	movl %ebx, %esi			/* keep the start_info address */
	movl $boot_stack_top, %esp

	/* PML4[0] -> PDPT, PDPT[0] -> PD, PD[i] -> i x 2 MiB (present, writable, large) */
	movl $pdpt, %eax
	orl $0x3, %eax
	movl %eax, pml4
	movl $pd, %eax
	orl $0x3, %eax
	movl %eax, pdpt
	xorl %ecx, %ecx
1:	movl %ecx, %eax
	shll $21, %eax
	orl $0x83, %eax
	movl %eax, pd(, %ecx, 8)
	movl $0, pd + 4(, %ecx, 8)
	incl %ecx
	cmpl $512, %ecx
	jne 1b

	movl $pml4, %eax
	movl %eax, %cr3
	movl %cr4, %eax
	orl $0x20, %eax			/* PAE */
	movl %eax, %cr4
	movl $0xc0000080, %ecx		/* EFER */
	rdmsr
	orl $0x100, %eax		/* LME */
	wrmsr
	movl %cr0, %eax
	orl $0x80000001, %eax		/* PG | PE */
	movl %eax, %cr0

	lgdt gdt_ptr
	ljmp $0x08, $long_mode

	.code64
long_mode:
	movw $0x10, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movw %ax, %fs
	movw %ax, %gs
	movq $boot_stack_top, %rsp
	movl %esi, %edi			/* kmain(start_info): zero-extended */
	call kmain
2:	cli
	hlt
	jmp 2b

	.section .rodata
	.p2align 3
gdt:
	.quad 0
	.quad 0x00209a0000000000	/* 0x08: 64-bit code */
	.quad 0x0000920000000000	/* 0x10: data */
gdt_end:
gdt_ptr:
	.word gdt_end - gdt - 1
	.long gdt

	.section .bss
	.p2align 12
pml4:	.skip 4096
pdpt:	.skip 4096
pd:	.skip 4096
	.p2align 4
	.skip 16384
boot_stack_top:

	.section .note.GNU-stack, "", @progbits
