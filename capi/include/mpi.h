/*
 * o2g's mpi.h: the MPI 5.0 standard ABI (MPI 5.0 chapter 20, ABI version
 * 1.0).
 *
 * Handle types are pointers to incomplete structs; predefined handles,
 * constants, error classes, MPI_Status layout and integer widths are the
 * values the standard ABI fixes, so a program compiled against any
 * standard-ABI mpi.h runs with this library and one compiled against this
 * header runs with any standard-ABI library.
 *
 * The header declares the whole ABI: every constant, type, predefined
 * handle and callback, and every function of the C binding with its
 * profiling twin (PMPI_). A function that o2g's libmpi_abi.so.1 does not
 * implement is not exported by it, so a program calling one fails to link
 * (or to load) instead of failing at run time; capi/README.md lists what is
 * implemented.
 *
 * Layout: the types and constants used everywhere first, then one part per
 * chapter of the standard, each with its own constants, callback types and
 * functions.
 */
#ifndef O2G_MPI_H
#define O2G_MPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Types and constants used throughout
 * ------------------------------------------------------------------------ */

/* Versions (MPI 5.0 §9.1.1, §20.2). */
#define MPI_VERSION 5
#define MPI_SUBVERSION 0
#define MPI_ABI_VERSION 1
#define MPI_ABI_SUBVERSION 0

/* Integer types (§20.4): address-sized MPI_Aint, 64-bit offsets/counts. */
typedef intptr_t MPI_Aint;
typedef int64_t MPI_Offset;
typedef int64_t MPI_Count;

/* MPI_Status (§3.2.5, §20.4): three public fields, five private ints. */
typedef struct {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
    int o2g_private[5];
} MPI_Status;

/* Handle types (§20.3). */
typedef struct MPI_ABI_Op *MPI_Op;
typedef struct MPI_ABI_Comm *MPI_Comm;
typedef struct MPI_ABI_Group *MPI_Group;
typedef struct MPI_ABI_Win *MPI_Win;
typedef struct MPI_ABI_File *MPI_File;
typedef struct MPI_ABI_Session *MPI_Session;
typedef struct MPI_ABI_Message *MPI_Message;
typedef struct MPI_ABI_Info *MPI_Info;
typedef struct MPI_ABI_Errhandler *MPI_Errhandler;
typedef struct MPI_ABI_Request *MPI_Request;
typedef struct MPI_ABI_Datatype *MPI_Datatype;

/* A predefined handle: the standard's small integer as a handle. */
#define O2G_HANDLE(type, value) ((type)(uintptr_t)(value))

/* Reduction operations. */
#define MPI_OP_NULL  O2G_HANDLE(MPI_Op, 0x020)
#define MPI_SUM      O2G_HANDLE(MPI_Op, 0x021)
#define MPI_MIN      O2G_HANDLE(MPI_Op, 0x022)
#define MPI_MAX      O2G_HANDLE(MPI_Op, 0x023)
#define MPI_PROD     O2G_HANDLE(MPI_Op, 0x024)
#define MPI_BAND     O2G_HANDLE(MPI_Op, 0x028)
#define MPI_BOR      O2G_HANDLE(MPI_Op, 0x029)
#define MPI_BXOR     O2G_HANDLE(MPI_Op, 0x02a)
#define MPI_LAND     O2G_HANDLE(MPI_Op, 0x030)
#define MPI_LOR      O2G_HANDLE(MPI_Op, 0x031)
#define MPI_LXOR     O2G_HANDLE(MPI_Op, 0x032)
#define MPI_MINLOC   O2G_HANDLE(MPI_Op, 0x038)
#define MPI_MAXLOC   O2G_HANDLE(MPI_Op, 0x039)
#define MPI_REPLACE  O2G_HANDLE(MPI_Op, 0x03c)
#define MPI_NO_OP    O2G_HANDLE(MPI_Op, 0x03d)

/* Communicators, groups and the other objects. */
#define MPI_COMM_NULL         O2G_HANDLE(MPI_Comm, 0x100)
#define MPI_COMM_WORLD        O2G_HANDLE(MPI_Comm, 0x101)
#define MPI_COMM_SELF         O2G_HANDLE(MPI_Comm, 0x102)
#define MPI_GROUP_NULL        O2G_HANDLE(MPI_Group, 0x108)
#define MPI_GROUP_EMPTY       O2G_HANDLE(MPI_Group, 0x109)
#define MPI_WIN_NULL          O2G_HANDLE(MPI_Win, 0x110)
#define MPI_FILE_NULL         O2G_HANDLE(MPI_File, 0x118)
#define MPI_SESSION_NULL      O2G_HANDLE(MPI_Session, 0x120)
#define MPI_MESSAGE_NULL      O2G_HANDLE(MPI_Message, 0x128)
#define MPI_MESSAGE_NO_PROC   O2G_HANDLE(MPI_Message, 0x129)
#define MPI_INFO_NULL         O2G_HANDLE(MPI_Info, 0x130)
#define MPI_INFO_ENV          O2G_HANDLE(MPI_Info, 0x131)
#define MPI_ERRHANDLER_NULL   O2G_HANDLE(MPI_Errhandler, 0x140)
#define MPI_ERRORS_ARE_FATAL  O2G_HANDLE(MPI_Errhandler, 0x141)
#define MPI_ERRORS_ABORT      O2G_HANDLE(MPI_Errhandler, 0x142)
#define MPI_ERRORS_RETURN     O2G_HANDLE(MPI_Errhandler, 0x143)
#define MPI_REQUEST_NULL      O2G_HANDLE(MPI_Request, 0x180)

/* Datatypes, numbered as chapter 20 fixes. capi/README.md says which ones
 * o2g supports in which calls. */
#define MPI_DATATYPE_NULL           O2G_HANDLE(MPI_Datatype, 0x200)
/* MPI's own integer types and packed bytes. */
#define MPI_AINT                    O2G_HANDLE(MPI_Datatype, 0x201)
#define MPI_COUNT                   O2G_HANDLE(MPI_Datatype, 0x202)
#define MPI_OFFSET                  O2G_HANDLE(MPI_Datatype, 0x203)
#define MPI_PACKED                  O2G_HANDLE(MPI_Datatype, 0x207)
/* C integers and floating point. */
#define MPI_SHORT                   O2G_HANDLE(MPI_Datatype, 0x208)
#define MPI_INT                     O2G_HANDLE(MPI_Datatype, 0x209)
#define MPI_LONG                    O2G_HANDLE(MPI_Datatype, 0x20a)
#define MPI_LONG_LONG               O2G_HANDLE(MPI_Datatype, 0x20b)
#define MPI_LONG_LONG_INT           MPI_LONG_LONG
#define MPI_UNSIGNED_SHORT          O2G_HANDLE(MPI_Datatype, 0x20c)
#define MPI_UNSIGNED                O2G_HANDLE(MPI_Datatype, 0x20d)
#define MPI_UNSIGNED_LONG           O2G_HANDLE(MPI_Datatype, 0x20e)
#define MPI_UNSIGNED_LONG_LONG      O2G_HANDLE(MPI_Datatype, 0x20f)
#define MPI_FLOAT                   O2G_HANDLE(MPI_Datatype, 0x210)
#define MPI_C_FLOAT_COMPLEX         O2G_HANDLE(MPI_Datatype, 0x212)
#define MPI_C_COMPLEX               MPI_C_FLOAT_COMPLEX
#define MPI_CXX_FLOAT_COMPLEX       O2G_HANDLE(MPI_Datatype, 0x213)
#define MPI_DOUBLE                  O2G_HANDLE(MPI_Datatype, 0x214)
#define MPI_C_DOUBLE_COMPLEX        O2G_HANDLE(MPI_Datatype, 0x216)
#define MPI_CXX_DOUBLE_COMPLEX      O2G_HANDLE(MPI_Datatype, 0x217)
/* Fortran types, usable from C. */
#define MPI_LOGICAL                 O2G_HANDLE(MPI_Datatype, 0x218)
#define MPI_INTEGER                 O2G_HANDLE(MPI_Datatype, 0x219)
#define MPI_REAL                    O2G_HANDLE(MPI_Datatype, 0x21a)
#define MPI_COMPLEX                 O2G_HANDLE(MPI_Datatype, 0x21b)
#define MPI_DOUBLE_PRECISION        O2G_HANDLE(MPI_Datatype, 0x21c)
#define MPI_DOUBLE_COMPLEX          O2G_HANDLE(MPI_Datatype, 0x21d)
#define MPI_CHARACTER               O2G_HANDLE(MPI_Datatype, 0x21e)
#define MPI_LONG_DOUBLE             O2G_HANDLE(MPI_Datatype, 0x220)
#define MPI_C_LONG_DOUBLE_COMPLEX   O2G_HANDLE(MPI_Datatype, 0x224)
#define MPI_CXX_LONG_DOUBLE_COMPLEX O2G_HANDLE(MPI_Datatype, 0x225)
/* Value-index pairs for MPI_MINLOC and MPI_MAXLOC. */
#define MPI_FLOAT_INT               O2G_HANDLE(MPI_Datatype, 0x228)
#define MPI_DOUBLE_INT              O2G_HANDLE(MPI_Datatype, 0x229)
#define MPI_LONG_INT                O2G_HANDLE(MPI_Datatype, 0x22a)
#define MPI_2INT                    O2G_HANDLE(MPI_Datatype, 0x22b)
#define MPI_SHORT_INT               O2G_HANDLE(MPI_Datatype, 0x22c)
#define MPI_LONG_DOUBLE_INT         O2G_HANDLE(MPI_Datatype, 0x22d)
#define MPI_2REAL                   O2G_HANDLE(MPI_Datatype, 0x230)
#define MPI_2DOUBLE_PRECISION       O2G_HANDLE(MPI_Datatype, 0x231)
#define MPI_2INTEGER                O2G_HANDLE(MPI_Datatype, 0x232)
/* Booleans, wide characters, bytes and fixed-size C integers. */
#define MPI_C_BOOL                  O2G_HANDLE(MPI_Datatype, 0x238)
#define MPI_CXX_BOOL                O2G_HANDLE(MPI_Datatype, 0x239)
#define MPI_WCHAR                   O2G_HANDLE(MPI_Datatype, 0x23c)
#define MPI_INT8_T                  O2G_HANDLE(MPI_Datatype, 0x240)
#define MPI_UINT8_T                 O2G_HANDLE(MPI_Datatype, 0x241)
#define MPI_CHAR                    O2G_HANDLE(MPI_Datatype, 0x243)
#define MPI_SIGNED_CHAR             O2G_HANDLE(MPI_Datatype, 0x244)
#define MPI_UNSIGNED_CHAR           O2G_HANDLE(MPI_Datatype, 0x245)
#define MPI_BYTE                    O2G_HANDLE(MPI_Datatype, 0x247)
#define MPI_INT16_T                 O2G_HANDLE(MPI_Datatype, 0x248)
#define MPI_UINT16_T                O2G_HANDLE(MPI_Datatype, 0x249)
#define MPI_INT32_T                 O2G_HANDLE(MPI_Datatype, 0x250)
#define MPI_UINT32_T                O2G_HANDLE(MPI_Datatype, 0x251)
#define MPI_INT64_T                 O2G_HANDLE(MPI_Datatype, 0x258)
#define MPI_UINT64_T                O2G_HANDLE(MPI_Datatype, 0x259)
/* Fortran types of a given size in bytes (MPI_INTEGER4 is 4 bytes). */
#define MPI_LOGICAL1                O2G_HANDLE(MPI_Datatype, 0x2c0)
#define MPI_INTEGER1                O2G_HANDLE(MPI_Datatype, 0x2c1)
#define MPI_LOGICAL2                O2G_HANDLE(MPI_Datatype, 0x2c8)
#define MPI_INTEGER2                O2G_HANDLE(MPI_Datatype, 0x2c9)
#define MPI_REAL2                   O2G_HANDLE(MPI_Datatype, 0x2ca)
#define MPI_LOGICAL4                O2G_HANDLE(MPI_Datatype, 0x2d0)
#define MPI_INTEGER4                O2G_HANDLE(MPI_Datatype, 0x2d1)
#define MPI_REAL4                   O2G_HANDLE(MPI_Datatype, 0x2d2)
#define MPI_COMPLEX4                O2G_HANDLE(MPI_Datatype, 0x2d3)
#define MPI_LOGICAL8                O2G_HANDLE(MPI_Datatype, 0x2d8)
#define MPI_INTEGER8                O2G_HANDLE(MPI_Datatype, 0x2d9)
#define MPI_REAL8                   O2G_HANDLE(MPI_Datatype, 0x2da)
#define MPI_COMPLEX8                O2G_HANDLE(MPI_Datatype, 0x2db)
#define MPI_LOGICAL16               O2G_HANDLE(MPI_Datatype, 0x2e0)
#define MPI_INTEGER16               O2G_HANDLE(MPI_Datatype, 0x2e1)
#define MPI_REAL16                  O2G_HANDLE(MPI_Datatype, 0x2e2)
#define MPI_COMPLEX16               O2G_HANDLE(MPI_Datatype, 0x2e3)
#define MPI_COMPLEX32               O2G_HANDLE(MPI_Datatype, 0x2eb)

/* Error classes (§9.4, values of §20.5). */
enum {
    MPI_SUCCESS = 0,
    MPI_ERR_BUFFER = 1,
    MPI_ERR_COUNT = 2,
    MPI_ERR_TYPE = 3,
    MPI_ERR_TAG = 4,
    MPI_ERR_COMM = 5,
    MPI_ERR_RANK = 6,
    MPI_ERR_REQUEST = 7,
    MPI_ERR_ROOT = 8,
    MPI_ERR_GROUP = 9,
    MPI_ERR_OP = 10,
    MPI_ERR_TOPOLOGY = 11,
    MPI_ERR_DIMS = 12,
    MPI_ERR_ARG = 13,
    MPI_ERR_UNKNOWN = 14,
    MPI_ERR_TRUNCATE = 15,
    MPI_ERR_OTHER = 16,
    MPI_ERR_INTERN = 17,
    MPI_ERR_PENDING = 18,
    MPI_ERR_IN_STATUS = 19,
    MPI_ERR_ACCESS = 20,
    MPI_ERR_AMODE = 21,
    MPI_ERR_ASSERT = 22,
    MPI_ERR_BAD_FILE = 23,
    MPI_ERR_BASE = 24,
    MPI_ERR_CONVERSION = 25,
    MPI_ERR_DISP = 26,
    MPI_ERR_DUP_DATAREP = 27,
    MPI_ERR_FILE_EXISTS = 28,
    MPI_ERR_FILE_IN_USE = 29,
    MPI_ERR_FILE = 30,
    MPI_ERR_INFO_KEY = 31,
    MPI_ERR_INFO_NOKEY = 32,
    MPI_ERR_INFO_VALUE = 33,
    MPI_ERR_INFO = 34,
    MPI_ERR_IO = 35,
    MPI_ERR_KEYVAL = 36,
    MPI_ERR_LOCKTYPE = 37,
    MPI_ERR_NAME = 38,
    MPI_ERR_NO_MEM = 39,
    MPI_ERR_NOT_SAME = 40,
    MPI_ERR_NO_SPACE = 41,
    MPI_ERR_NO_SUCH_FILE = 42,
    MPI_ERR_PORT = 43,
    MPI_ERR_QUOTA = 44,
    MPI_ERR_READ_ONLY = 45,
    MPI_ERR_RMA_ATTACH = 46,
    MPI_ERR_RMA_CONFLICT = 47,
    MPI_ERR_RMA_RANGE = 48,
    MPI_ERR_RMA_SHARED = 49,
    MPI_ERR_RMA_SYNC = 50,
    MPI_ERR_SERVICE = 51,
    MPI_ERR_SIZE = 52,
    MPI_ERR_SPAWN = 53,
    MPI_ERR_UNSUPPORTED_DATAREP = 54,
    MPI_ERR_UNSUPPORTED_OPERATION = 55,
    MPI_ERR_WIN = 56,
    MPI_ERR_RMA_FLAVOR = 57,
    MPI_ERR_PROC_ABORTED = 58,
    MPI_ERR_VALUE_TOO_LARGE = 59,
    MPI_ERR_SESSION = 60,
    MPI_ERR_ERRHANDLER = 61,
    MPI_ERR_ABI = 62,
    MPI_ERR_LASTCODE = 16383
};

/* Buffer addresses and ignored arguments. */
#define MPI_BOTTOM           ((void *)0)
#define MPI_IN_PLACE         ((void *)1)
#define MPI_BUFFER_AUTOMATIC ((void *)2)
#define MPI_STATUS_IGNORE    ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE  ((MPI_Status *)0)
#define MPI_ERRCODES_IGNORE  ((int *)0)
#define MPI_ARGV_NULL        ((char **)0)
#define MPI_ARGVS_NULL       ((char ***)0)

/* String sizes. */
#define MPI_MAX_ERROR_STRING 512
#define MPI_MAX_LIBRARY_VERSION_STRING 8192
#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_MAX_OBJECT_NAME 128
#define MPI_MAX_INFO_KEY 256
#define MPI_MAX_INFO_VAL 1024
#define MPI_MAX_PORT_NAME 1024
#define MPI_MAX_DATAREP_STRING 128
#define MPI_MAX_STRINGTAG_LEN 1024
#define MPI_MAX_PSET_NAME_LEN 1024

/* Wildcards and sentinels (all negative). */
enum {
    MPI_ANY_SOURCE = -1,
    MPI_ANY_TAG = -2,
    MPI_PROC_NULL = -3,
    MPI_ROOT = -4,
    MPI_UNDEFINED = -32766
};

/* Thread levels (ordered: SINGLE < FUNNELED < SERIALIZED < MULTIPLE). */
enum {
    MPI_THREAD_SINGLE = 0,
    MPI_THREAD_FUNNELED = 1024,
    MPI_THREAD_SERIALIZED = 2048,
    MPI_THREAD_MULTIPLE = 4096
};

/* Results of MPI_Comm_compare and MPI_Group_compare. */
enum {
    MPI_IDENT = 201,
    MPI_CONGRUENT = 202,
    MPI_SIMILAR = 203,
    MPI_UNEQUAL = 204
};

/* Attribute keys: the invalid key, the predefined attributes of
 * MPI_COMM_WORLD (chapter 9) and of windows (chapter 12). */
enum {
    MPI_KEYVAL_INVALID = 0,
    MPI_TAG_UB = 501,
    MPI_IO = 502,
    MPI_HOST = 503, /* deprecated since MPI-4.1 */
    MPI_WTIME_IS_GLOBAL = 504,
    MPI_APPNUM = 505,
    MPI_LASTUSEDCODE = 506,
    MPI_UNIVERSE_SIZE = 507,
    MPI_WIN_BASE = 601,
    MPI_WIN_DISP_UNIT = 602,
    MPI_WIN_SIZE = 603,
    MPI_WIN_CREATE_FLAVOR = 604,
    MPI_WIN_MODEL = 605
};

/*
 * Functions. O2G_FUNCTION declares each one twice with the same type: as
 * MPI_name and, for the profiling interface (chapter 15), as PMPI_name.
 * Functions with a _c suffix are the large-count forms (MPI_Count counts,
 * MPI_Aint displacements) of the one before them.
 */
#define O2G_FUNCTION(ret, name, params) ret name params; ret P##name params

/* ------------------------------------------------------------------------
 * Chapter 3: point-to-point communication
 * ------------------------------------------------------------------------ */

/* Space a buffered send takes in the attached buffer beyond its data. */
#define MPI_BSEND_OVERHEAD 512

/* Blocking send and receive, status inquiry. */
O2G_FUNCTION(int, MPI_Send, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                             MPI_Comm comm));
O2G_FUNCTION(int, MPI_Send_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                               int tag, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Recv, (void *buf, int count, MPI_Datatype datatype, int source, int tag,
                             MPI_Comm comm, MPI_Status *status));
O2G_FUNCTION(int, MPI_Recv_c, (void *buf, MPI_Count count, MPI_Datatype datatype, int source,
                               int tag, MPI_Comm comm, MPI_Status *status));
O2G_FUNCTION(int, MPI_Get_count, (const MPI_Status *status, MPI_Datatype datatype, int *count));
O2G_FUNCTION(int, MPI_Get_count_c, (const MPI_Status *status, MPI_Datatype datatype,
                                    MPI_Count *count));
O2G_FUNCTION(int, MPI_Status_get_source, (const MPI_Status *status, int *source));
O2G_FUNCTION(int, MPI_Status_get_tag, (const MPI_Status *status, int *tag));
O2G_FUNCTION(int, MPI_Status_get_error, (const MPI_Status *status, int *error));
O2G_FUNCTION(int, MPI_Status_set_source, (MPI_Status *status, int source));
O2G_FUNCTION(int, MPI_Status_set_tag, (MPI_Status *status, int tag));
O2G_FUNCTION(int, MPI_Status_set_error, (MPI_Status *status, int error));
O2G_FUNCTION(int, MPI_Bsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                              MPI_Comm comm));
O2G_FUNCTION(int, MPI_Bsend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                int tag, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Ssend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                              MPI_Comm comm));
O2G_FUNCTION(int, MPI_Ssend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                int tag, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Rsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                              MPI_Comm comm));
O2G_FUNCTION(int, MPI_Rsend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                int tag, MPI_Comm comm));

/* Buffered-mode buffers: one per process, communicator or session. */
O2G_FUNCTION(int, MPI_Buffer_attach, (void *buffer, int size));
O2G_FUNCTION(int, MPI_Buffer_attach_c, (void *buffer, MPI_Count size));
O2G_FUNCTION(int, MPI_Buffer_detach, (void *buffer_addr, int *size));
O2G_FUNCTION(int, MPI_Buffer_detach_c, (void *buffer_addr, MPI_Count *size));
O2G_FUNCTION(int, MPI_Buffer_flush, (void));
O2G_FUNCTION(int, MPI_Buffer_iflush, (MPI_Request *request));
O2G_FUNCTION(int, MPI_Comm_attach_buffer, (MPI_Comm comm, void *buffer, int size));
O2G_FUNCTION(int, MPI_Comm_attach_buffer_c, (MPI_Comm comm, void *buffer, MPI_Count size));
O2G_FUNCTION(int, MPI_Comm_detach_buffer, (MPI_Comm comm, void *buffer_addr, int *size));
O2G_FUNCTION(int, MPI_Comm_detach_buffer_c, (MPI_Comm comm, void *buffer_addr, MPI_Count *size));
O2G_FUNCTION(int, MPI_Comm_flush_buffer, (MPI_Comm comm));
O2G_FUNCTION(int, MPI_Comm_iflush_buffer, (MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Session_attach_buffer, (MPI_Session session, void *buffer, int size));
O2G_FUNCTION(int, MPI_Session_attach_buffer_c, (MPI_Session session, void *buffer,
                                                MPI_Count size));
O2G_FUNCTION(int, MPI_Session_detach_buffer, (MPI_Session session, void *buffer_addr, int *size));
O2G_FUNCTION(int, MPI_Session_detach_buffer_c, (MPI_Session session, void *buffer_addr,
                                                MPI_Count *size));
O2G_FUNCTION(int, MPI_Session_flush_buffer, (MPI_Session session));
O2G_FUNCTION(int, MPI_Session_iflush_buffer, (MPI_Session session, MPI_Request *request));

/* Nonblocking communication and completion. */
O2G_FUNCTION(int, MPI_Isend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                              MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Isend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ibsend, (const void *buf, int count, MPI_Datatype datatype, int dest,
                               int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ibsend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                 int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Issend, (const void *buf, int count, MPI_Datatype datatype, int dest,
                               int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Issend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                 int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Irsend, (const void *buf, int count, MPI_Datatype datatype, int dest,
                               int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Irsend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                 int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Irecv, (void *buf, int count, MPI_Datatype datatype, int source, int tag,
                              MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Irecv_c, (void *buf, MPI_Count count, MPI_Datatype datatype, int source,
                                int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Wait, (MPI_Request *request, MPI_Status *status));
O2G_FUNCTION(int, MPI_Test, (MPI_Request *request, int *flag, MPI_Status *status));
O2G_FUNCTION(int, MPI_Request_free, (MPI_Request *request));
O2G_FUNCTION(int, MPI_Waitany, (int count, MPI_Request array_of_requests[], int *indx,
                                MPI_Status *status));
O2G_FUNCTION(int, MPI_Testany, (int count, MPI_Request array_of_requests[], int *indx, int *flag,
                                MPI_Status *status));
O2G_FUNCTION(int, MPI_Waitall, (int count, MPI_Request array_of_requests[],
                                MPI_Status *array_of_statuses));
O2G_FUNCTION(int, MPI_Testall, (int count, MPI_Request array_of_requests[], int *flag,
                                MPI_Status *array_of_statuses));
O2G_FUNCTION(int, MPI_Waitsome, (int incount, MPI_Request array_of_requests[], int *outcount,
                                 int array_of_indices[], MPI_Status *array_of_statuses));
O2G_FUNCTION(int, MPI_Testsome, (int incount, MPI_Request array_of_requests[], int *outcount,
                                 int array_of_indices[], MPI_Status *array_of_statuses));
O2G_FUNCTION(int, MPI_Request_get_status, (MPI_Request request, int *flag, MPI_Status *status));
O2G_FUNCTION(int, MPI_Request_get_status_any, (int count, const MPI_Request array_of_requests[],
                                               int *indx, int *flag, MPI_Status *status));
O2G_FUNCTION(int, MPI_Request_get_status_all, (int count, const MPI_Request array_of_requests[],
                                               int *flag, MPI_Status *array_of_statuses));
O2G_FUNCTION(int, MPI_Request_get_status_some, (int incount, const MPI_Request array_of_requests[],
                                                int *outcount, int array_of_indices[],
                                                MPI_Status *array_of_statuses));

/* Probe, matched probe and receive, cancel. */
O2G_FUNCTION(int, MPI_Iprobe, (int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status));
O2G_FUNCTION(int, MPI_Probe, (int source, int tag, MPI_Comm comm, MPI_Status *status));
O2G_FUNCTION(int, MPI_Improbe, (int source, int tag, MPI_Comm comm, int *flag,
                                MPI_Message *message, MPI_Status *status));
O2G_FUNCTION(int, MPI_Mprobe, (int source, int tag, MPI_Comm comm, MPI_Message *message,
                               MPI_Status *status));
O2G_FUNCTION(int, MPI_Mrecv, (void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                              MPI_Status *status));
O2G_FUNCTION(int, MPI_Mrecv_c, (void *buf, MPI_Count count, MPI_Datatype datatype,
                                MPI_Message *message, MPI_Status *status));
O2G_FUNCTION(int, MPI_Imrecv, (void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                               MPI_Request *request));
O2G_FUNCTION(int, MPI_Imrecv_c, (void *buf, MPI_Count count, MPI_Datatype datatype,
                                 MPI_Message *message, MPI_Request *request));
O2G_FUNCTION(int, MPI_Cancel, (MPI_Request *request));
O2G_FUNCTION(int, MPI_Test_cancelled, (const MPI_Status *status, int *flag));

/* Persistent requests. */
O2G_FUNCTION(int, MPI_Send_init, (const void *buf, int count, MPI_Datatype datatype, int dest,
                                  int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Send_init_c, (const void *buf, MPI_Count count, MPI_Datatype datatype,
                                    int dest, int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Bsend_init, (const void *buf, int count, MPI_Datatype datatype, int dest,
                                   int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Bsend_init_c, (const void *buf, MPI_Count count, MPI_Datatype datatype,
                                     int dest, int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ssend_init, (const void *buf, int count, MPI_Datatype datatype, int dest,
                                   int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ssend_init_c, (const void *buf, MPI_Count count, MPI_Datatype datatype,
                                     int dest, int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Rsend_init, (const void *buf, int count, MPI_Datatype datatype, int dest,
                                   int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Rsend_init_c, (const void *buf, MPI_Count count, MPI_Datatype datatype,
                                     int dest, int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Recv_init, (void *buf, int count, MPI_Datatype datatype, int source, int tag,
                                  MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Recv_init_c, (void *buf, MPI_Count count, MPI_Datatype datatype, int source,
                                    int tag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Start, (MPI_Request *request));
O2G_FUNCTION(int, MPI_Startall, (int count, MPI_Request array_of_requests[]));

/* Send-receive. */
O2G_FUNCTION(int, MPI_Sendrecv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 int dest, int sendtag, void *recvbuf, int recvcount,
                                 MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                                 MPI_Status *status));
O2G_FUNCTION(int, MPI_Sendrecv_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                   int dest, int sendtag, void *recvbuf, MPI_Count recvcount,
                                   MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                                   MPI_Status *status));
O2G_FUNCTION(int, MPI_Sendrecv_replace, (void *buf, int count, MPI_Datatype datatype, int dest,
                                         int sendtag, int source, int recvtag, MPI_Comm comm,
                                         MPI_Status *status));
O2G_FUNCTION(int, MPI_Sendrecv_replace_c, (void *buf, MPI_Count count, MPI_Datatype datatype,
                                           int dest, int sendtag, int source, int recvtag,
                                           MPI_Comm comm, MPI_Status *status));
O2G_FUNCTION(int, MPI_Isendrecv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  int dest, int sendtag, void *recvbuf, int recvcount,
                                  MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                                  MPI_Request *request));
O2G_FUNCTION(int, MPI_Isendrecv_c, (const void *sendbuf, MPI_Count sendcount,
                                    MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                                    MPI_Count recvcount, MPI_Datatype recvtype, int source,
                                    int recvtag, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Isendrecv_replace, (void *buf, int count, MPI_Datatype datatype, int dest,
                                          int sendtag, int source, int recvtag, MPI_Comm comm,
                                          MPI_Request *request));
O2G_FUNCTION(int, MPI_Isendrecv_replace_c, (void *buf, MPI_Count count, MPI_Datatype datatype,
                                            int dest, int sendtag, int source, int recvtag,
                                            MPI_Comm comm, MPI_Request *request));

/* ------------------------------------------------------------------------
 * Chapter 4: partitioned point-to-point communication
 * ------------------------------------------------------------------------ */

O2G_FUNCTION(int, MPI_Psend_init, (const void *buf, int partitions, int count,
                                   MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                   MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Psend_init_c, (const void *buf, int partitions, MPI_Count count,
                                     MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                     MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Precv_init, (void *buf, int partitions, int count, MPI_Datatype datatype,
                                   int dest, int tag, MPI_Comm comm, MPI_Info info,
                                   MPI_Request *request));
O2G_FUNCTION(int, MPI_Precv_init_c, (void *buf, int partitions, MPI_Count count,
                                     MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                     MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Pready, (int partition, MPI_Request request));
O2G_FUNCTION(int, MPI_Pready_range, (int partition_low, int partition_high, MPI_Request request));
O2G_FUNCTION(int, MPI_Pready_list, (int length, const int array_of_partitions[],
                                    MPI_Request request));
O2G_FUNCTION(int, MPI_Parrived, (MPI_Request request, int partition, int *flag));

/* ------------------------------------------------------------------------
 * Chapter 5: datatypes
 * ------------------------------------------------------------------------ */

/* Array storage order and distributions (MPI_Type_create_subarray,
 * MPI_Type_create_darray). */
enum {
    MPI_ORDER_C = 12,
    MPI_ORDER_FORTRAN = 15,
    MPI_DISTRIBUTE_NONE = 16,
    MPI_DISTRIBUTE_BLOCK = 17,
    MPI_DISTRIBUTE_CYCLIC = 18,
    MPI_DISTRIBUTE_DFLT_DARG = 19
};

/* Combiners that MPI_Type_get_envelope reports. */
enum {
    MPI_COMBINER_NAMED = 101,
    MPI_COMBINER_DUP = 102,
    MPI_COMBINER_CONTIGUOUS = 103,
    MPI_COMBINER_VECTOR = 104,
    MPI_COMBINER_HVECTOR = 105,
    MPI_COMBINER_INDEXED = 106,
    MPI_COMBINER_HINDEXED = 107,
    MPI_COMBINER_INDEXED_BLOCK = 108,
    MPI_COMBINER_HINDEXED_BLOCK = 109,
    MPI_COMBINER_STRUCT = 110,
    MPI_COMBINER_SUBARRAY = 111,
    MPI_COMBINER_DARRAY = 112,
    MPI_COMBINER_F90_REAL = 113,
    MPI_COMBINER_F90_COMPLEX = 114,
    MPI_COMBINER_F90_INTEGER = 115,
    MPI_COMBINER_RESIZED = 116,
    MPI_COMBINER_VALUE_INDEX = 117
};

/* Type constructors. */
O2G_FUNCTION(int, MPI_Type_contiguous, (int count, MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_contiguous_c, (MPI_Count count, MPI_Datatype oldtype,
                                          MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_vector, (int count, int blocklength, int stride, MPI_Datatype oldtype,
                                    MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_vector_c, (MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                                      MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_hvector, (int count, int blocklength, MPI_Aint stride,
                                            MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_hvector_c, (MPI_Count count, MPI_Count blocklength,
                                              MPI_Count stride, MPI_Datatype oldtype,
                                              MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_indexed, (int count, const int array_of_blocklengths[],
                                     const int array_of_displacements[], MPI_Datatype oldtype,
                                     MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_indexed_c, (MPI_Count count, const MPI_Count array_of_blocklengths[],
                                       const MPI_Count array_of_displacements[],
                                       MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_hindexed, (int count, const int array_of_blocklengths[],
                                             const MPI_Aint array_of_displacements[],
                                             MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_hindexed_c, (MPI_Count count,
                                               const MPI_Count array_of_blocklengths[],
                                               const MPI_Count array_of_displacements[],
                                               MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_indexed_block, (int count, int blocklength,
                                                  const int array_of_displacements[],
                                                  MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_indexed_block_c, (MPI_Count count, MPI_Count blocklength,
                                                    const MPI_Count array_of_displacements[],
                                                    MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_hindexed_block, (int count, int blocklength,
                                                   const MPI_Aint array_of_displacements[],
                                                   MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_hindexed_block_c, (MPI_Count count, MPI_Count blocklength,
                                                     const MPI_Count array_of_displacements[],
                                                     MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_struct, (int count, const int array_of_blocklengths[],
                                           const MPI_Aint array_of_displacements[],
                                           const MPI_Datatype array_of_types[],
                                           MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_struct_c, (MPI_Count count,
                                             const MPI_Count array_of_blocklengths[],
                                             const MPI_Count array_of_displacements[],
                                             const MPI_Datatype array_of_types[],
                                             MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_subarray, (int ndims, const int array_of_sizes[],
                                             const int array_of_subsizes[],
                                             const int array_of_starts[], int order,
                                             MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_subarray_c, (int ndims, const MPI_Count array_of_sizes[],
                                               const MPI_Count array_of_subsizes[],
                                               const MPI_Count array_of_starts[], int order,
                                               MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_darray, (int size, int rank, int ndims,
                                           const int array_of_gsizes[],
                                           const int array_of_distribs[],
                                           const int array_of_dargs[], const int array_of_psizes[],
                                           int order, MPI_Datatype oldtype,
                                           MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_darray_c, (int size, int rank, int ndims,
                                             const MPI_Count array_of_gsizes[],
                                             const int array_of_distribs[],
                                             const int array_of_dargs[],
                                             const int array_of_psizes[], int order,
                                             MPI_Datatype oldtype, MPI_Datatype *newtype));

/* Addresses, sizes and extents; the _x forms are deprecated since MPI-4.1 in favour
 * of the _c ones. */
O2G_FUNCTION(int, MPI_Get_address, (const void *location, MPI_Aint *address));
O2G_FUNCTION(MPI_Aint, MPI_Aint_add, (MPI_Aint base, MPI_Aint disp));
O2G_FUNCTION(MPI_Aint, MPI_Aint_diff, (MPI_Aint addr1, MPI_Aint addr2));
O2G_FUNCTION(int, MPI_Type_size, (MPI_Datatype datatype, int *size));
O2G_FUNCTION(int, MPI_Type_size_c, (MPI_Datatype datatype, MPI_Count *size));
O2G_FUNCTION(int, MPI_Type_size_x, (MPI_Datatype datatype, MPI_Count *size));
O2G_FUNCTION(int, MPI_Type_get_extent, (MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent));
O2G_FUNCTION(int, MPI_Type_get_extent_c, (MPI_Datatype datatype, MPI_Count *lb,
                                          MPI_Count *extent));
O2G_FUNCTION(int, MPI_Type_get_extent_x, (MPI_Datatype datatype, MPI_Count *lb,
                                          MPI_Count *extent));
O2G_FUNCTION(int, MPI_Type_create_resized, (MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                                            MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_resized_c, (MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                                              MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_get_true_extent, (MPI_Datatype datatype, MPI_Aint *true_lb,
                                             MPI_Aint *true_extent));
O2G_FUNCTION(int, MPI_Type_get_true_extent_c, (MPI_Datatype datatype, MPI_Count *true_lb,
                                               MPI_Count *true_extent));
O2G_FUNCTION(int, MPI_Type_get_true_extent_x, (MPI_Datatype datatype, MPI_Count *true_lb,
                                               MPI_Count *true_extent));

/* Commit, free, duplicate, decode (MPI_Get_elements_x: deprecated since MPI-4.1). */
O2G_FUNCTION(int, MPI_Type_commit, (MPI_Datatype *datatype));
O2G_FUNCTION(int, MPI_Type_free, (MPI_Datatype *datatype));
O2G_FUNCTION(int, MPI_Type_dup, (MPI_Datatype oldtype, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Get_elements, (const MPI_Status *status, MPI_Datatype datatype, int *count));
O2G_FUNCTION(int, MPI_Get_elements_c, (const MPI_Status *status, MPI_Datatype datatype,
                                       MPI_Count *count));
O2G_FUNCTION(int, MPI_Get_elements_x, (const MPI_Status *status, MPI_Datatype datatype,
                                       MPI_Count *count));
O2G_FUNCTION(int, MPI_Type_get_value_index, (MPI_Datatype value_type, MPI_Datatype index_type,
                                             MPI_Datatype *pair_type));
O2G_FUNCTION(int, MPI_Type_get_envelope, (MPI_Datatype datatype, int *num_integers,
                                          int *num_addresses, int *num_datatypes, int *combiner));
O2G_FUNCTION(int, MPI_Type_get_envelope_c, (MPI_Datatype datatype, MPI_Count *num_integers,
                                            MPI_Count *num_addresses, MPI_Count *num_large_counts,
                                            MPI_Count *num_datatypes, int *combiner));
O2G_FUNCTION(int, MPI_Type_get_contents, (MPI_Datatype datatype, int max_integers,
                                          int max_addresses, int max_datatypes,
                                          int array_of_integers[], MPI_Aint array_of_addresses[],
                                          MPI_Datatype array_of_datatypes[]));
O2G_FUNCTION(int, MPI_Type_get_contents_c, (MPI_Datatype datatype, MPI_Count max_integers,
                                            MPI_Count max_addresses, MPI_Count max_large_counts,
                                            MPI_Count max_datatypes, int array_of_integers[],
                                            MPI_Aint array_of_addresses[],
                                            MPI_Count array_of_large_counts[],
                                            MPI_Datatype array_of_datatypes[]));

/* Pack and unpack. */
O2G_FUNCTION(int, MPI_Pack, (const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
                             int outsize, int *position, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Pack_c, (const void *inbuf, MPI_Count incount, MPI_Datatype datatype,
                               void *outbuf, MPI_Count outsize, MPI_Count *position,
                               MPI_Comm comm));
O2G_FUNCTION(int, MPI_Unpack, (const void *inbuf, int insize, int *position, void *outbuf,
                               int outcount, MPI_Datatype datatype, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Unpack_c, (const void *inbuf, MPI_Count insize, MPI_Count *position,
                                 void *outbuf, MPI_Count outcount, MPI_Datatype datatype,
                                 MPI_Comm comm));
O2G_FUNCTION(int, MPI_Pack_size, (int incount, MPI_Datatype datatype, MPI_Comm comm, int *size));
O2G_FUNCTION(int, MPI_Pack_size_c, (MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm,
                                    MPI_Count *size));
O2G_FUNCTION(int, MPI_Pack_external, (const char *datarep, const void *inbuf, int incount,
                                      MPI_Datatype datatype, void *outbuf, MPI_Aint outsize,
                                      MPI_Aint *position));
O2G_FUNCTION(int, MPI_Pack_external_c, (const char *datarep, const void *inbuf, MPI_Count incount,
                                        MPI_Datatype datatype, void *outbuf, MPI_Count outsize,
                                        MPI_Count *position));
O2G_FUNCTION(int, MPI_Unpack_external, (const char datarep[], const void *inbuf, MPI_Aint insize,
                                        MPI_Aint *position, void *outbuf, int outcount,
                                        MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_Unpack_external_c, (const char datarep[], const void *inbuf,
                                          MPI_Count insize, MPI_Count *position, void *outbuf,
                                          MPI_Count outcount, MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_Pack_external_size, (const char *datarep, int incount, MPI_Datatype datatype,
                                           MPI_Aint *size));
O2G_FUNCTION(int, MPI_Pack_external_size_c, (const char *datarep, MPI_Count incount,
                                             MPI_Datatype datatype, MPI_Count *size));

/* ------------------------------------------------------------------------
 * Chapter 6: collective communication
 * ------------------------------------------------------------------------ */

/* A user reduction (§6.9.5): inoutvec[i] = invec[i] op inoutvec[i]. */
typedef void (MPI_User_function)(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);
typedef void (MPI_User_function_c)(void *invec, void *inoutvec, MPI_Count *len,
                                   MPI_Datatype *datatype);

/* Blocking collectives. */
O2G_FUNCTION(int, MPI_Barrier, (MPI_Comm comm));
O2G_FUNCTION(int, MPI_Bcast, (void *buffer, int count, MPI_Datatype datatype, int root,
                              MPI_Comm comm));
O2G_FUNCTION(int, MPI_Bcast_c, (void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                                MPI_Comm comm));
O2G_FUNCTION(int, MPI_Gather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                               MPI_Comm comm));
O2G_FUNCTION(int, MPI_Gather_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                 int root, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Gatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, const int recvcounts[], const int displs[],
                                MPI_Datatype recvtype, int root, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Gatherv_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, const MPI_Count recvcounts[],
                                  const MPI_Aint displs[], MPI_Datatype recvtype, int root,
                                  MPI_Comm comm));
O2G_FUNCTION(int, MPI_Scatter, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                MPI_Comm comm));
O2G_FUNCTION(int, MPI_Scatter_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                  int root, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Scatterv, (const void *sendbuf, const int sendcounts[], const int displs[],
                                 MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                 MPI_Datatype recvtype, int root, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Scatterv_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                   const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,
                                   MPI_Count recvcount, MPI_Datatype recvtype, int root,
                                   MPI_Comm comm));
O2G_FUNCTION(int, MPI_Allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm));
O2G_FUNCTION(int, MPI_Allgather_c, (const void *sendbuf, MPI_Count sendcount,
                                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                    MPI_Datatype recvtype, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, const int recvcounts[], const int displs[],
                                   MPI_Datatype recvtype, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Allgatherv_c, (const void *sendbuf, MPI_Count sendcount,
                                     MPI_Datatype sendtype, void *recvbuf,
                                     const MPI_Count recvcounts[], const MPI_Aint displs[],
                                     MPI_Datatype recvtype, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                 MPI_Comm comm));
O2G_FUNCTION(int, MPI_Alltoall_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm));
O2G_FUNCTION(int, MPI_Alltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[],
                                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Alltoallv_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                    const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                    const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                    MPI_Datatype recvtype, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Alltoallw, (const void *sendbuf, const int sendcounts[], const int sdispls[],
                                  const MPI_Datatype sendtypes[], void *recvbuf,
                                  const int recvcounts[], const int rdispls[],
                                  const MPI_Datatype recvtypes[], MPI_Comm comm));
O2G_FUNCTION(int, MPI_Alltoallw_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                    const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                    void *recvbuf, const MPI_Count recvcounts[],
                                    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                    MPI_Comm comm));
O2G_FUNCTION(int, MPI_Reduce, (const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Reduce_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                 MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Allreduce, (const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Allreduce_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Reduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount,
                                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Reduce_scatter_block_c, (const void *sendbuf, void *recvbuf,
                                               MPI_Count recvcount, MPI_Datatype datatype,
                                               MPI_Op op, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Reduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[],
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Reduce_scatter_c, (const void *sendbuf, void *recvbuf,
                                         const MPI_Count recvcounts[], MPI_Datatype datatype,
                                         MPI_Op op, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Scan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Scan_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Exscan, (const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Exscan_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm));

/* Reduction operations. */
O2G_FUNCTION(int, MPI_Op_create, (MPI_User_function *user_fn, int commute, MPI_Op *op));
O2G_FUNCTION(int, MPI_Op_create_c, (MPI_User_function_c *user_fn, int commute, MPI_Op *op));
O2G_FUNCTION(int, MPI_Op_free, (MPI_Op *op));
O2G_FUNCTION(int, MPI_Op_commutative, (MPI_Op op, int *commute));
O2G_FUNCTION(int, MPI_Reduce_local, (const void *inbuf, void *inoutbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op));
O2G_FUNCTION(int, MPI_Reduce_local_c, (const void *inbuf, void *inoutbuf, MPI_Count count,
                                       MPI_Datatype datatype, MPI_Op op));

/* Nonblocking collectives. */
O2G_FUNCTION(int, MPI_Ibarrier, (MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ibcast, (void *buffer, int count, MPI_Datatype datatype, int root,
                               MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ibcast_c, (void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                                 MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Igather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Igather_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                  int root, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Igatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, int root, MPI_Comm comm,
                                 MPI_Request *request));
O2G_FUNCTION(int, MPI_Igatherv_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, const MPI_Count recvcounts[],
                                   const MPI_Aint displs[], MPI_Datatype recvtype, int root,
                                   MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Iscatter, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                 MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Iscatter_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                   int root, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Iscatterv, (const void *sendbuf, const int sendcounts[], const int displs[],
                                  MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                  MPI_Datatype recvtype, int root, MPI_Comm comm,
                                  MPI_Request *request));
O2G_FUNCTION(int, MPI_Iscatterv_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                    const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,
                                    MPI_Count recvcount, MPI_Datatype recvtype, int root,
                                    MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Iallgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Iallgather_c, (const void *sendbuf, MPI_Count sendcount,
                                     MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Iallgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, const int recvcounts[], const int displs[],
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Iallgatherv_c, (const void *sendbuf, MPI_Count sendcount,
                                      MPI_Datatype sendtype, void *recvbuf,
                                      const MPI_Count recvcounts[], const MPI_Aint displs[],
                                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ialltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ialltoall_c, (const void *sendbuf, MPI_Count sendcount,
                                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ialltoallv, (const void *sendbuf, const int sendcounts[],
                                   const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                   const int recvcounts[], const int rdispls[],
                                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ialltoallv_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                     const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                     void *recvbuf, const MPI_Count recvcounts[],
                                     const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                     MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ialltoallw, (const void *sendbuf, const int sendcounts[],
                                   const int sdispls[], const MPI_Datatype sendtypes[],
                                   void *recvbuf, const int recvcounts[], const int rdispls[],
                                   const MPI_Datatype recvtypes[], MPI_Comm comm,
                                   MPI_Request *request));
O2G_FUNCTION(int, MPI_Ialltoallw_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                     const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                     void *recvbuf, const MPI_Count recvcounts[],
                                     const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                     MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ireduce, (const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                                MPI_Request *request));
O2G_FUNCTION(int, MPI_Ireduce_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                  MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                                  MPI_Request *request));
O2G_FUNCTION(int, MPI_Iallreduce, (const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   MPI_Request *request));
O2G_FUNCTION(int, MPI_Iallreduce_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                     MPI_Request *request));
O2G_FUNCTION(int, MPI_Ireduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount,
                                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                              MPI_Request *request));
O2G_FUNCTION(int, MPI_Ireduce_scatter_block_c, (const void *sendbuf, void *recvbuf,
                                                MPI_Count recvcount, MPI_Datatype datatype,
                                                MPI_Op op, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ireduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[],
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                        MPI_Request *request));
O2G_FUNCTION(int, MPI_Ireduce_scatter_c, (const void *sendbuf, void *recvbuf,
                                          const MPI_Count recvcounts[], MPI_Datatype datatype,
                                          MPI_Op op, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Iscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Iscan_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request));
O2G_FUNCTION(int, MPI_Iexscan, (const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request));
O2G_FUNCTION(int, MPI_Iexscan_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  MPI_Request *request));

/* Persistent collectives. */
O2G_FUNCTION(int, MPI_Barrier_init, (MPI_Comm comm, MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Bcast_init, (void *buffer, int count, MPI_Datatype datatype, int root,
                                   MPI_Comm comm, MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Bcast_init_c, (void *buffer, MPI_Count count, MPI_Datatype datatype,
                                     int root, MPI_Comm comm, MPI_Info info,
                                     MPI_Request *request));
O2G_FUNCTION(int, MPI_Gather_init, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                    MPI_Comm comm, MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Gather_init_c, (const void *sendbuf, MPI_Count sendcount,
                                      MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                      MPI_Datatype recvtype, int root, MPI_Comm comm,
                                      MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Gatherv_init, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, const int recvcounts[], const int displs[],
                                     MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                                     MPI_Request *request));
O2G_FUNCTION(int, MPI_Gatherv_init_c, (const void *sendbuf, MPI_Count sendcount,
                                       MPI_Datatype sendtype, void *recvbuf,
                                       const MPI_Count recvcounts[], const MPI_Aint displs[],
                                       MPI_Datatype recvtype, int root, MPI_Comm comm,
                                       MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Scatter_init, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                     MPI_Comm comm, MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Scatter_init_c, (const void *sendbuf, MPI_Count sendcount,
                                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                       MPI_Datatype recvtype, int root, MPI_Comm comm,
                                       MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Scatterv_init, (const void *sendbuf, const int sendcounts[],
                                      const int displs[], MPI_Datatype sendtype, void *recvbuf,
                                      int recvcount, MPI_Datatype recvtype, int root,
                                      MPI_Comm comm, MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Scatterv_init_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                        const MPI_Aint displs[], MPI_Datatype sendtype,
                                        void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                        int root, MPI_Comm comm, MPI_Info info,
                                        MPI_Request *request));
O2G_FUNCTION(int, MPI_Allgather_init, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Allgather_init_c, (const void *sendbuf, MPI_Count sendcount,
                                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                         MPI_Request *request));
O2G_FUNCTION(int, MPI_Allgatherv_init, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void *recvbuf, const int recvcounts[], const int displs[],
                                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                        MPI_Request *request));
O2G_FUNCTION(int, MPI_Allgatherv_init_c, (const void *sendbuf, MPI_Count sendcount,
                                          MPI_Datatype sendtype, void *recvbuf,
                                          const MPI_Count recvcounts[], const MPI_Aint displs[],
                                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                          MPI_Request *request));
O2G_FUNCTION(int, MPI_Alltoall_init, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm, MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Alltoall_init_c, (const void *sendbuf, MPI_Count sendcount,
                                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                        MPI_Request *request));
O2G_FUNCTION(int, MPI_Alltoallv_init, (const void *sendbuf, const int sendcounts[],
                                       const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                       const int recvcounts[], const int rdispls[],
                                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                       MPI_Request *request));
O2G_FUNCTION(int, MPI_Alltoallv_init_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                         const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                         void *recvbuf, const MPI_Count recvcounts[],
                                         const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                         MPI_Comm comm, MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Alltoallw_init, (const void *sendbuf, const int sendcounts[],
                                       const int sdispls[], const MPI_Datatype sendtypes[],
                                       void *recvbuf, const int recvcounts[], const int rdispls[],
                                       const MPI_Datatype recvtypes[], MPI_Comm comm,
                                       MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Alltoallw_init_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                         void *recvbuf, const MPI_Count recvcounts[],
                                         const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                         MPI_Comm comm, MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Reduce_init, (const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                                    MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Reduce_init_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                      MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                                      MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Allreduce_init, (const void *sendbuf, void *recvbuf, int count,
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                       MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Allreduce_init_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                         MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Reduce_scatter_block_init, (const void *sendbuf, void *recvbuf,
                                                  int recvcount, MPI_Datatype datatype, MPI_Op op,
                                                  MPI_Comm comm, MPI_Info info,
                                                  MPI_Request *request));
O2G_FUNCTION(int, MPI_Reduce_scatter_block_init_c, (const void *sendbuf, void *recvbuf,
                                                    MPI_Count recvcount, MPI_Datatype datatype,
                                                    MPI_Op op, MPI_Comm comm, MPI_Info info,
                                                    MPI_Request *request));
O2G_FUNCTION(int, MPI_Reduce_scatter_init, (const void *sendbuf, void *recvbuf,
                                            const int recvcounts[], MPI_Datatype datatype,
                                            MPI_Op op, MPI_Comm comm, MPI_Info info,
                                            MPI_Request *request));
O2G_FUNCTION(int, MPI_Reduce_scatter_init_c, (const void *sendbuf, void *recvbuf,
                                              const MPI_Count recvcounts[], MPI_Datatype datatype,
                                              MPI_Op op, MPI_Comm comm, MPI_Info info,
                                              MPI_Request *request));
O2G_FUNCTION(int, MPI_Scan_init, (const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request));
O2G_FUNCTION(int, MPI_Scan_init_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request));
O2G_FUNCTION(int, MPI_Exscan_init, (const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request));
O2G_FUNCTION(int, MPI_Exscan_init_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                      MPI_Info info, MPI_Request *request));

/* ------------------------------------------------------------------------
 * Chapter 7: groups, contexts, communicators and caching
 * ------------------------------------------------------------------------ */

/* Split types of MPI_Comm_split_type. */
enum {
    MPI_COMM_TYPE_SHARED = 221,
    MPI_COMM_TYPE_HW_UNGUIDED = 222,
    MPI_COMM_TYPE_HW_GUIDED = 223,
    MPI_COMM_TYPE_RESOURCE_GUIDED = 224
};

/* Attribute copy and delete callbacks, per kind of object. A copy callback
 * sets *flag to keep the attribute on the copy. */
typedef int (MPI_Comm_copy_attr_function)(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
                                          void *attribute_val_in, void *attribute_val_out,
                                          int *flag);
typedef int (MPI_Comm_delete_attr_function)(MPI_Comm comm, int comm_keyval, void *attribute_val,
                                            void *extra_state);
typedef int (MPI_Type_copy_attr_function)(MPI_Datatype oldtype, int type_keyval,
                                          void *extra_state, void *attribute_val_in,
                                          void *attribute_val_out, int *flag);
typedef int (MPI_Type_delete_attr_function)(MPI_Datatype datatype, int type_keyval,
                                            void *attribute_val, void *extra_state);
typedef int (MPI_Win_copy_attr_function)(MPI_Win oldwin, int win_keyval, void *extra_state,
                                         void *attribute_val_in, void *attribute_val_out,
                                         int *flag);
typedef int (MPI_Win_delete_attr_function)(MPI_Win win, int win_keyval, void *attribute_val,
                                           void *extra_state);
/* The communicator callbacks of MPI_Keyval_create (deprecated since MPI-2.0). */
typedef int (MPI_Copy_function)(MPI_Comm oldcomm, int keyval, void *extra_state,
                                void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int (MPI_Delete_function)(MPI_Comm comm, int keyval, void *attribute_val,
                                  void *extra_state);

/* Predefined callbacks: NULL_COPY keeps no attribute on the copy, DUP
 * copies the value, NULL_DELETE does nothing. In the standard ABI they are
 * small integers the library recognises, not functions a program can call. */
#define MPI_COMM_NULL_COPY_FN   ((MPI_Comm_copy_attr_function *)0)
#define MPI_COMM_DUP_FN         ((MPI_Comm_copy_attr_function *)1)
#define MPI_COMM_NULL_DELETE_FN ((MPI_Comm_delete_attr_function *)0)
#define MPI_TYPE_NULL_COPY_FN   ((MPI_Type_copy_attr_function *)0)
#define MPI_TYPE_DUP_FN         ((MPI_Type_copy_attr_function *)1)
#define MPI_TYPE_NULL_DELETE_FN ((MPI_Type_delete_attr_function *)0)
#define MPI_WIN_NULL_COPY_FN    ((MPI_Win_copy_attr_function *)0)
#define MPI_WIN_DUP_FN          ((MPI_Win_copy_attr_function *)1)
#define MPI_WIN_NULL_DELETE_FN  ((MPI_Win_delete_attr_function *)0)
#define MPI_NULL_COPY_FN        ((MPI_Copy_function *)0)
#define MPI_DUP_FN              ((MPI_Copy_function *)1)
#define MPI_NULL_DELETE_FN      ((MPI_Delete_function *)0)

/* Groups. */
O2G_FUNCTION(int, MPI_Group_size, (MPI_Group group, int *size));
O2G_FUNCTION(int, MPI_Group_rank, (MPI_Group group, int *rank));
O2G_FUNCTION(int, MPI_Group_translate_ranks, (MPI_Group group1, int n, const int ranks1[],
                                              MPI_Group group2, int ranks2[]));
O2G_FUNCTION(int, MPI_Group_compare, (MPI_Group group1, MPI_Group group2, int *result));
O2G_FUNCTION(int, MPI_Comm_group, (MPI_Comm comm, MPI_Group *group));
O2G_FUNCTION(int, MPI_Group_union, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup));
O2G_FUNCTION(int, MPI_Group_intersection, (MPI_Group group1, MPI_Group group2,
                                           MPI_Group *newgroup));
O2G_FUNCTION(int, MPI_Group_difference, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup));
O2G_FUNCTION(int, MPI_Group_incl, (MPI_Group group, int n, const int ranks[],
                                   MPI_Group *newgroup));
O2G_FUNCTION(int, MPI_Group_excl, (MPI_Group group, int n, const int ranks[],
                                   MPI_Group *newgroup));
O2G_FUNCTION(int, MPI_Group_range_incl, (MPI_Group group, int n, int ranges[][3],
                                         MPI_Group *newgroup));
O2G_FUNCTION(int, MPI_Group_range_excl, (MPI_Group group, int n, int ranges[][3],
                                         MPI_Group *newgroup));
O2G_FUNCTION(int, MPI_Group_free, (MPI_Group *group));

/* Communicators. */
O2G_FUNCTION(int, MPI_Comm_size, (MPI_Comm comm, int *size));
O2G_FUNCTION(int, MPI_Comm_rank, (MPI_Comm comm, int *rank));
O2G_FUNCTION(int, MPI_Comm_compare, (MPI_Comm comm1, MPI_Comm comm2, int *result));
O2G_FUNCTION(int, MPI_Comm_dup, (MPI_Comm comm, MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Comm_dup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Comm_idup, (MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Comm_idup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                                            MPI_Request *request));
O2G_FUNCTION(int, MPI_Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Comm_create_group, (MPI_Comm comm, MPI_Group group, int tag,
                                          MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Comm_create_from_group, (MPI_Group group, const char *stringtag,
                                               MPI_Info info, MPI_Errhandler errhandler,
                                               MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Comm_split_type, (MPI_Comm comm, int split_type, int key, MPI_Info info,
                                        MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Comm_free, (MPI_Comm *comm));
O2G_FUNCTION(int, MPI_Comm_set_info, (MPI_Comm comm, MPI_Info info));
O2G_FUNCTION(int, MPI_Comm_get_info, (MPI_Comm comm, MPI_Info *info_used));

/* Inter-communicators. */
O2G_FUNCTION(int, MPI_Comm_test_inter, (MPI_Comm comm, int *flag));
O2G_FUNCTION(int, MPI_Comm_remote_size, (MPI_Comm comm, int *size));
O2G_FUNCTION(int, MPI_Comm_remote_group, (MPI_Comm comm, MPI_Group *group));
O2G_FUNCTION(int, MPI_Intercomm_create, (MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                         int remote_leader, int tag, MPI_Comm *newintercomm));
O2G_FUNCTION(int, MPI_Intercomm_create_from_groups, (MPI_Group local_group, int local_leader,
                                                     MPI_Group remote_group, int remote_leader,
                                                     const char *stringtag, MPI_Info info,
                                                     MPI_Errhandler errhandler,
                                                     MPI_Comm *newintercomm));
O2G_FUNCTION(int, MPI_Intercomm_merge, (MPI_Comm intercomm, int high, MPI_Comm *newintracomm));

/* Caching; MPI_Keyval_* and MPI_Attr_* are the deprecated forms. */
O2G_FUNCTION(int, MPI_Comm_create_keyval, (MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                           MPI_Comm_delete_attr_function *comm_delete_attr_fn,
                                           int *comm_keyval, void *extra_state));
O2G_FUNCTION(int, MPI_Comm_free_keyval, (int *comm_keyval));
O2G_FUNCTION(int, MPI_Comm_set_attr, (MPI_Comm comm, int comm_keyval, void *attribute_val));
O2G_FUNCTION(int, MPI_Comm_get_attr, (MPI_Comm comm, int comm_keyval, void *attribute_val,
                                      int *flag));
O2G_FUNCTION(int, MPI_Comm_delete_attr, (MPI_Comm comm, int comm_keyval));
O2G_FUNCTION(int, MPI_Win_create_keyval, (MPI_Win_copy_attr_function *win_copy_attr_fn,
                                          MPI_Win_delete_attr_function *win_delete_attr_fn,
                                          int *win_keyval, void *extra_state));
O2G_FUNCTION(int, MPI_Win_free_keyval, (int *win_keyval));
O2G_FUNCTION(int, MPI_Win_set_attr, (MPI_Win win, int win_keyval, void *attribute_val));
O2G_FUNCTION(int, MPI_Win_get_attr, (MPI_Win win, int win_keyval, void *attribute_val, int *flag));
O2G_FUNCTION(int, MPI_Win_delete_attr, (MPI_Win win, int win_keyval));
O2G_FUNCTION(int, MPI_Type_create_keyval, (MPI_Type_copy_attr_function *type_copy_attr_fn,
                                           MPI_Type_delete_attr_function *type_delete_attr_fn,
                                           int *type_keyval, void *extra_state));
O2G_FUNCTION(int, MPI_Type_free_keyval, (int *type_keyval));
O2G_FUNCTION(int, MPI_Type_set_attr, (MPI_Datatype datatype, int type_keyval,
                                      void *attribute_val));
O2G_FUNCTION(int, MPI_Type_get_attr, (MPI_Datatype datatype, int type_keyval, void *attribute_val,
                                      int *flag));
O2G_FUNCTION(int, MPI_Type_delete_attr, (MPI_Datatype datatype, int type_keyval));
O2G_FUNCTION(int, MPI_Keyval_create, (MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn,
                                      int *keyval, void *extra_state));
O2G_FUNCTION(int, MPI_Keyval_free, (int *keyval));
O2G_FUNCTION(int, MPI_Attr_put, (MPI_Comm comm, int keyval, void *attribute_val));
O2G_FUNCTION(int, MPI_Attr_get, (MPI_Comm comm, int keyval, void *attribute_val, int *flag));
O2G_FUNCTION(int, MPI_Attr_delete, (MPI_Comm comm, int keyval));

/* Naming objects. */
O2G_FUNCTION(int, MPI_Comm_set_name, (MPI_Comm comm, const char *comm_name));
O2G_FUNCTION(int, MPI_Comm_get_name, (MPI_Comm comm, char *comm_name, int *resultlen));
O2G_FUNCTION(int, MPI_Type_set_name, (MPI_Datatype datatype, const char *type_name));
O2G_FUNCTION(int, MPI_Type_get_name, (MPI_Datatype datatype, char *type_name, int *resultlen));
O2G_FUNCTION(int, MPI_Win_set_name, (MPI_Win win, const char *win_name));
O2G_FUNCTION(int, MPI_Win_get_name, (MPI_Win win, char *win_name, int *resultlen));

/* ------------------------------------------------------------------------
 * Chapter 8: process topologies
 * ------------------------------------------------------------------------ */

/* Topology kinds (MPI_Topo_test). */
enum {
    MPI_CART = 211,
    MPI_GRAPH = 212,
    MPI_DIST_GRAPH = 213
};

/* Weights arguments of the distributed graph constructors: no weights,
 * and an empty but weighted list. */
#define MPI_UNWEIGHTED    ((int *)10)
#define MPI_WEIGHTS_EMPTY ((int *)11)

/* Constructors and inquiry. */
O2G_FUNCTION(int, MPI_Cart_create, (MPI_Comm comm_old, int ndims, const int dims[],
                                    const int periods[], int reorder, MPI_Comm *comm_cart));
O2G_FUNCTION(int, MPI_Dims_create, (int nnodes, int ndims, int dims[]));
O2G_FUNCTION(int, MPI_Graph_create, (MPI_Comm comm_old, int nnodes, const int indx[],
                                     const int edges[], int reorder, MPI_Comm *comm_graph));
O2G_FUNCTION(int, MPI_Dist_graph_create_adjacent, (MPI_Comm comm_old, int indegree,
                                                   const int sources[], const int sourceweights[],
                                                   int outdegree, const int destinations[],
                                                   const int destweights[], MPI_Info info,
                                                   int reorder, MPI_Comm *comm_dist_graph));
O2G_FUNCTION(int, MPI_Dist_graph_create, (MPI_Comm comm_old, int n, const int sources[],
                                          const int degrees[], const int destinations[],
                                          const int weights[], MPI_Info info, int reorder,
                                          MPI_Comm *comm_dist_graph));
O2G_FUNCTION(int, MPI_Topo_test, (MPI_Comm comm, int *status));
O2G_FUNCTION(int, MPI_Graphdims_get, (MPI_Comm comm, int *nnodes, int *nedges));
O2G_FUNCTION(int, MPI_Graph_get, (MPI_Comm comm, int maxindex, int maxedges, int indx[],
                                  int edges[]));
O2G_FUNCTION(int, MPI_Cartdim_get, (MPI_Comm comm, int *ndims));
O2G_FUNCTION(int, MPI_Cart_get, (MPI_Comm comm, int maxdims, int dims[], int periods[],
                                 int coords[]));
O2G_FUNCTION(int, MPI_Cart_rank, (MPI_Comm comm, const int coords[], int *rank));
O2G_FUNCTION(int, MPI_Cart_coords, (MPI_Comm comm, int rank, int maxdims, int coords[]));
O2G_FUNCTION(int, MPI_Graph_neighbors_count, (MPI_Comm comm, int rank, int *nneighbors));
O2G_FUNCTION(int, MPI_Graph_neighbors, (MPI_Comm comm, int rank, int maxneighbors,
                                        int neighbors[]));
O2G_FUNCTION(int, MPI_Dist_graph_neighbors_count, (MPI_Comm comm, int *indegree, int *outdegree,
                                                   int *weighted));
O2G_FUNCTION(int, MPI_Dist_graph_neighbors, (MPI_Comm comm, int maxindegree, int sources[],
                                             int sourceweights[], int maxoutdegree,
                                             int destinations[], int destweights[]));
O2G_FUNCTION(int, MPI_Cart_shift, (MPI_Comm comm, int direction, int disp, int *rank_source,
                                   int *rank_dest));
O2G_FUNCTION(int, MPI_Cart_sub, (MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Cart_map, (MPI_Comm comm, int ndims, const int dims[], const int periods[],
                                 int *newrank));
O2G_FUNCTION(int, MPI_Graph_map, (MPI_Comm comm, int nnodes, const int indx[], const int edges[],
                                  int *newrank));

/* Neighborhood collectives: blocking, nonblocking, persistent. */
O2G_FUNCTION(int, MPI_Neighbor_allgather, (const void *sendbuf, int sendcount,
                                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                           MPI_Datatype recvtype, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Neighbor_allgather_c, (const void *sendbuf, MPI_Count sendcount,
                                             MPI_Datatype sendtype, void *recvbuf,
                                             MPI_Count recvcount, MPI_Datatype recvtype,
                                             MPI_Comm comm));
O2G_FUNCTION(int, MPI_Neighbor_allgatherv, (const void *sendbuf, int sendcount,
                                            MPI_Datatype sendtype, void *recvbuf,
                                            const int recvcounts[], const int displs[],
                                            MPI_Datatype recvtype, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Neighbor_allgatherv_c, (const void *sendbuf, MPI_Count sendcount,
                                              MPI_Datatype sendtype, void *recvbuf,
                                              const MPI_Count recvcounts[],
                                              const MPI_Aint displs[], MPI_Datatype recvtype,
                                              MPI_Comm comm));
O2G_FUNCTION(int, MPI_Neighbor_alltoall, (const void *sendbuf, int sendcount,
                                          MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                          MPI_Datatype recvtype, MPI_Comm comm));
O2G_FUNCTION(int, MPI_Neighbor_alltoall_c, (const void *sendbuf, MPI_Count sendcount,
                                            MPI_Datatype sendtype, void *recvbuf,
                                            MPI_Count recvcount, MPI_Datatype recvtype,
                                            MPI_Comm comm));
O2G_FUNCTION(int, MPI_Neighbor_alltoallv, (const void *sendbuf, const int sendcounts[],
                                           const int sdispls[], MPI_Datatype sendtype,
                                           void *recvbuf, const int recvcounts[],
                                           const int rdispls[], MPI_Datatype recvtype,
                                           MPI_Comm comm));
O2G_FUNCTION(int, MPI_Neighbor_alltoallv_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                             const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                             void *recvbuf, const MPI_Count recvcounts[],
                                             const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                             MPI_Comm comm));
O2G_FUNCTION(int, MPI_Neighbor_alltoallw, (const void *sendbuf, const int sendcounts[],
                                           const MPI_Aint sdispls[],
                                           const MPI_Datatype sendtypes[], void *recvbuf,
                                           const int recvcounts[], const MPI_Aint rdispls[],
                                           const MPI_Datatype recvtypes[], MPI_Comm comm));
O2G_FUNCTION(int, MPI_Neighbor_alltoallw_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                             const MPI_Aint sdispls[],
                                             const MPI_Datatype sendtypes[], void *recvbuf,
                                             const MPI_Count recvcounts[],
                                             const MPI_Aint rdispls[],
                                             const MPI_Datatype recvtypes[], MPI_Comm comm));
O2G_FUNCTION(int, MPI_Ineighbor_allgather, (const void *sendbuf, int sendcount,
                                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                            MPI_Datatype recvtype, MPI_Comm comm,
                                            MPI_Request *request));
O2G_FUNCTION(int, MPI_Ineighbor_allgather_c, (const void *sendbuf, MPI_Count sendcount,
                                              MPI_Datatype sendtype, void *recvbuf,
                                              MPI_Count recvcount, MPI_Datatype recvtype,
                                              MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ineighbor_allgatherv, (const void *sendbuf, int sendcount,
                                             MPI_Datatype sendtype, void *recvbuf,
                                             const int recvcounts[], const int displs[],
                                             MPI_Datatype recvtype, MPI_Comm comm,
                                             MPI_Request *request));
O2G_FUNCTION(int, MPI_Ineighbor_allgatherv_c, (const void *sendbuf, MPI_Count sendcount,
                                               MPI_Datatype sendtype, void *recvbuf,
                                               const MPI_Count recvcounts[],
                                               const MPI_Aint displs[], MPI_Datatype recvtype,
                                               MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ineighbor_alltoall, (const void *sendbuf, int sendcount,
                                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                           MPI_Datatype recvtype, MPI_Comm comm,
                                           MPI_Request *request));
O2G_FUNCTION(int, MPI_Ineighbor_alltoall_c, (const void *sendbuf, MPI_Count sendcount,
                                             MPI_Datatype sendtype, void *recvbuf,
                                             MPI_Count recvcount, MPI_Datatype recvtype,
                                             MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ineighbor_alltoallv, (const void *sendbuf, const int sendcounts[],
                                            const int sdispls[], MPI_Datatype sendtype,
                                            void *recvbuf, const int recvcounts[],
                                            const int rdispls[], MPI_Datatype recvtype,
                                            MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ineighbor_alltoallv_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                              const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                              void *recvbuf, const MPI_Count recvcounts[],
                                              const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                              MPI_Comm comm, MPI_Request *request));
O2G_FUNCTION(int, MPI_Ineighbor_alltoallw, (const void *sendbuf, const int sendcounts[],
                                            const MPI_Aint sdispls[],
                                            const MPI_Datatype sendtypes[], void *recvbuf,
                                            const int recvcounts[], const MPI_Aint rdispls[],
                                            const MPI_Datatype recvtypes[], MPI_Comm comm,
                                            MPI_Request *request));
O2G_FUNCTION(int, MPI_Ineighbor_alltoallw_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                              const MPI_Aint sdispls[],
                                              const MPI_Datatype sendtypes[], void *recvbuf,
                                              const MPI_Count recvcounts[],
                                              const MPI_Aint rdispls[],
                                              const MPI_Datatype recvtypes[], MPI_Comm comm,
                                              MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_allgather_init, (const void *sendbuf, int sendcount,
                                                MPI_Datatype sendtype, void *recvbuf,
                                                int recvcount, MPI_Datatype recvtype,
                                                MPI_Comm comm, MPI_Info info,
                                                MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_allgather_init_c, (const void *sendbuf, MPI_Count sendcount,
                                                  MPI_Datatype sendtype, void *recvbuf,
                                                  MPI_Count recvcount, MPI_Datatype recvtype,
                                                  MPI_Comm comm, MPI_Info info,
                                                  MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_allgatherv_init, (const void *sendbuf, int sendcount,
                                                 MPI_Datatype sendtype, void *recvbuf,
                                                 const int recvcounts[], const int displs[],
                                                 MPI_Datatype recvtype, MPI_Comm comm,
                                                 MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_allgatherv_init_c, (const void *sendbuf, MPI_Count sendcount,
                                                   MPI_Datatype sendtype, void *recvbuf,
                                                   const MPI_Count recvcounts[],
                                                   const MPI_Aint displs[], MPI_Datatype recvtype,
                                                   MPI_Comm comm, MPI_Info info,
                                                   MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_alltoall_init, (const void *sendbuf, int sendcount,
                                               MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                               MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_alltoall_init_c, (const void *sendbuf, MPI_Count sendcount,
                                                 MPI_Datatype sendtype, void *recvbuf,
                                                 MPI_Count recvcount, MPI_Datatype recvtype,
                                                 MPI_Comm comm, MPI_Info info,
                                                 MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_alltoallv_init, (const void *sendbuf, const int sendcounts[],
                                                const int sdispls[], MPI_Datatype sendtype,
                                                void *recvbuf, const int recvcounts[],
                                                const int rdispls[], MPI_Datatype recvtype,
                                                MPI_Comm comm, MPI_Info info,
                                                MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_alltoallv_init_c, (const void *sendbuf,
                                                  const MPI_Count sendcounts[],
                                                  const MPI_Aint sdispls[], MPI_Datatype sendtype,
                                                  void *recvbuf, const MPI_Count recvcounts[],
                                                  const MPI_Aint rdispls[], MPI_Datatype recvtype,
                                                  MPI_Comm comm, MPI_Info info,
                                                  MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_alltoallw_init, (const void *sendbuf, const int sendcounts[],
                                                const MPI_Aint sdispls[],
                                                const MPI_Datatype sendtypes[], void *recvbuf,
                                                const int recvcounts[], const MPI_Aint rdispls[],
                                                const MPI_Datatype recvtypes[], MPI_Comm comm,
                                                MPI_Info info, MPI_Request *request));
O2G_FUNCTION(int, MPI_Neighbor_alltoallw_init_c, (const void *sendbuf,
                                                  const MPI_Count sendcounts[],
                                                  const MPI_Aint sdispls[],
                                                  const MPI_Datatype sendtypes[], void *recvbuf,
                                                  const MPI_Count recvcounts[],
                                                  const MPI_Aint rdispls[],
                                                  const MPI_Datatype recvtypes[], MPI_Comm comm,
                                                  MPI_Info info, MPI_Request *request));

/* ------------------------------------------------------------------------
 * Chapter 9: environmental management
 * ------------------------------------------------------------------------ */

/* Error handler callbacks: the object and the error code, then
 * implementation-specific arguments. The _fn names are the older ones. */
typedef void (MPI_Comm_errhandler_function)(MPI_Comm *comm, int *error_code, ...);
typedef void (MPI_File_errhandler_function)(MPI_File *file, int *error_code, ...);
typedef void (MPI_Win_errhandler_function)(MPI_Win *win, int *error_code, ...);
typedef void (MPI_Session_errhandler_function)(MPI_Session *session, int *error_code, ...);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef MPI_File_errhandler_function MPI_File_errhandler_fn;
typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;
typedef MPI_Session_errhandler_function MPI_Session_errhandler_fn;

/* Implementation information. */
O2G_FUNCTION(int, MPI_Get_version, (int *version, int *subversion));
O2G_FUNCTION(int, MPI_Get_library_version, (char *version, int *resultlen));
O2G_FUNCTION(int, MPI_Get_processor_name, (char *name, int *resultlen));
O2G_FUNCTION(int, MPI_Get_hw_resource_info, (MPI_Info *hw_info));

/* Memory allocation. */
O2G_FUNCTION(int, MPI_Alloc_mem, (MPI_Aint size, MPI_Info info, void *baseptr));
O2G_FUNCTION(int, MPI_Free_mem, (void *base));

/* Error handlers. */
O2G_FUNCTION(int, MPI_Comm_create_errhandler, (MPI_Comm_errhandler_function *comm_errhandler_fn,
                                               MPI_Errhandler *errhandler));
O2G_FUNCTION(int, MPI_Comm_set_errhandler, (MPI_Comm comm, MPI_Errhandler errhandler));
O2G_FUNCTION(int, MPI_Comm_get_errhandler, (MPI_Comm comm, MPI_Errhandler *errhandler));
O2G_FUNCTION(int, MPI_Win_create_errhandler, (MPI_Win_errhandler_function *win_errhandler_fn,
                                              MPI_Errhandler *errhandler));
O2G_FUNCTION(int, MPI_Win_set_errhandler, (MPI_Win win, MPI_Errhandler errhandler));
O2G_FUNCTION(int, MPI_Win_get_errhandler, (MPI_Win win, MPI_Errhandler *errhandler));
O2G_FUNCTION(int, MPI_File_create_errhandler, (MPI_File_errhandler_function *file_errhandler_fn,
                                               MPI_Errhandler *errhandler));
O2G_FUNCTION(int, MPI_File_set_errhandler, (MPI_File file, MPI_Errhandler errhandler));
O2G_FUNCTION(int, MPI_File_get_errhandler, (MPI_File file, MPI_Errhandler *errhandler));
O2G_FUNCTION(int, MPI_Session_create_errhandler,
             (MPI_Session_errhandler_function *session_errhandler_fn, MPI_Errhandler *errhandler));
O2G_FUNCTION(int, MPI_Session_set_errhandler, (MPI_Session session, MPI_Errhandler errhandler));
O2G_FUNCTION(int, MPI_Session_get_errhandler, (MPI_Session session, MPI_Errhandler *errhandler));
O2G_FUNCTION(int, MPI_Errhandler_free, (MPI_Errhandler *errhandler));
O2G_FUNCTION(int, MPI_Error_string, (int errorcode, char *string, int *resultlen));

/* Error classes and codes. */
O2G_FUNCTION(int, MPI_Error_class, (int errorcode, int *errorclass));
O2G_FUNCTION(int, MPI_Add_error_class, (int *errorclass));
O2G_FUNCTION(int, MPI_Remove_error_class, (int errorclass));
O2G_FUNCTION(int, MPI_Add_error_code, (int errorclass, int *errorcode));
O2G_FUNCTION(int, MPI_Remove_error_code, (int errorcode));
O2G_FUNCTION(int, MPI_Add_error_string, (int errorcode, const char *string));
O2G_FUNCTION(int, MPI_Remove_error_string, (int errorcode));
O2G_FUNCTION(int, MPI_Comm_call_errhandler, (MPI_Comm comm, int errorcode));
O2G_FUNCTION(int, MPI_Win_call_errhandler, (MPI_Win win, int errorcode));
O2G_FUNCTION(int, MPI_File_call_errhandler, (MPI_File fh, int errorcode));
O2G_FUNCTION(int, MPI_Session_call_errhandler, (MPI_Session session, int errorcode));

/* Timers. */
O2G_FUNCTION(double, MPI_Wtime, (void));
O2G_FUNCTION(double, MPI_Wtick, (void));

/* ------------------------------------------------------------------------
 * Chapter 10: the info object
 * ------------------------------------------------------------------------ */

/* MPI_Info_get and MPI_Info_get_valuelen are deprecated since MPI-4.0 in favour
 * of MPI_Info_get_string. */
O2G_FUNCTION(int, MPI_Info_create, (MPI_Info *info));
O2G_FUNCTION(int, MPI_Info_create_env, (int argc, char *argv[], MPI_Info *info));
O2G_FUNCTION(int, MPI_Info_set, (MPI_Info info, const char *key, const char *value));
O2G_FUNCTION(int, MPI_Info_delete, (MPI_Info info, const char *key));
O2G_FUNCTION(int, MPI_Info_get_string, (MPI_Info info, const char *key, int *buflen, char *value,
                                        int *flag));
O2G_FUNCTION(int, MPI_Info_get, (MPI_Info info, const char *key, int valuelen, char *value,
                                 int *flag));
O2G_FUNCTION(int, MPI_Info_get_valuelen, (MPI_Info info, const char *key, int *valuelen,
                                          int *flag));
O2G_FUNCTION(int, MPI_Info_get_nkeys, (MPI_Info info, int *nkeys));
O2G_FUNCTION(int, MPI_Info_get_nthkey, (MPI_Info info, int n, char *key));
O2G_FUNCTION(int, MPI_Info_dup, (MPI_Info info, MPI_Info *newinfo));
O2G_FUNCTION(int, MPI_Info_free, (MPI_Info *info));

/* ------------------------------------------------------------------------
 * Chapter 11: process initialization, creation and management
 * ------------------------------------------------------------------------ */

/* World model. */
O2G_FUNCTION(int, MPI_Init, (int *argc, char ***argv));
O2G_FUNCTION(int, MPI_Init_thread, (int *argc, char ***argv, int required, int *provided));
O2G_FUNCTION(int, MPI_Query_thread, (int *provided));
O2G_FUNCTION(int, MPI_Is_thread_main, (int *flag));
O2G_FUNCTION(int, MPI_Finalize, (void));
O2G_FUNCTION(int, MPI_Initialized, (int *flag));
O2G_FUNCTION(int, MPI_Finalized, (int *flag));
O2G_FUNCTION(int, MPI_Abort, (MPI_Comm comm, int errorcode));

/* Sessions model. */
O2G_FUNCTION(int, MPI_Session_init, (MPI_Info info, MPI_Errhandler errhandler,
                                     MPI_Session *session));
O2G_FUNCTION(int, MPI_Session_finalize, (MPI_Session *session));
O2G_FUNCTION(int, MPI_Session_get_num_psets, (MPI_Session session, MPI_Info info,
                                              int *npset_names));
O2G_FUNCTION(int, MPI_Session_get_nth_pset, (MPI_Session session, MPI_Info info, int n,
                                             int *pset_len, char *pset_name));
O2G_FUNCTION(int, MPI_Session_get_info, (MPI_Session session, MPI_Info *info_used));
O2G_FUNCTION(int, MPI_Session_get_pset_info, (MPI_Session session, const char *pset_name,
                                              MPI_Info *info));
O2G_FUNCTION(int, MPI_Group_from_session_pset, (MPI_Session session, const char *pset_name,
                                                MPI_Group *newgroup));

/* Dynamic processes: spawning, client/server, names, join. */
O2G_FUNCTION(int, MPI_Comm_spawn, (const char *command, char *argv[], int maxprocs, MPI_Info info,
                                   int root, MPI_Comm comm, MPI_Comm *intercomm,
                                   int array_of_errcodes[]));
O2G_FUNCTION(int, MPI_Comm_get_parent, (MPI_Comm *parent));
O2G_FUNCTION(int, MPI_Comm_spawn_multiple, (int count, char *array_of_commands[],
                                            char **array_of_argv[], const int array_of_maxprocs[],
                                            const MPI_Info array_of_info[], int root,
                                            MPI_Comm comm, MPI_Comm *intercomm,
                                            int array_of_errcodes[]));
O2G_FUNCTION(int, MPI_Open_port, (MPI_Info info, char *port_name));
O2G_FUNCTION(int, MPI_Close_port, (const char *port_name));
O2G_FUNCTION(int, MPI_Comm_accept, (const char *port_name, MPI_Info info, int root, MPI_Comm comm,
                                    MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Comm_connect, (const char *port_name, MPI_Info info, int root, MPI_Comm comm,
                                     MPI_Comm *newcomm));
O2G_FUNCTION(int, MPI_Publish_name, (const char *service_name, MPI_Info info,
                                     const char *port_name));
O2G_FUNCTION(int, MPI_Unpublish_name, (const char *service_name, MPI_Info info,
                                       const char *port_name));
O2G_FUNCTION(int, MPI_Lookup_name, (const char *service_name, MPI_Info info, char *port_name));
O2G_FUNCTION(int, MPI_Comm_disconnect, (MPI_Comm *comm));
O2G_FUNCTION(int, MPI_Comm_join, (int fd, MPI_Comm *intercomm));

/* ------------------------------------------------------------------------
 * Chapter 12: one-sided communication
 * ------------------------------------------------------------------------ */

/* Lock types, window flavors and memory models. */
enum {
    MPI_LOCK_EXCLUSIVE = 301,
    MPI_LOCK_SHARED = 302,
    MPI_WIN_FLAVOR_CREATE = 311,
    MPI_WIN_FLAVOR_ALLOCATE = 312,
    MPI_WIN_FLAVOR_DYNAMIC = 313,
    MPI_WIN_FLAVOR_SHARED = 314,
    MPI_WIN_UNIFIED = 321,
    MPI_WIN_SEPARATE = 322
};

/* Mode bits, which a program ORs together: file access modes (chapter 14)
 * and assertions of the synchronization calls. */
enum {
    MPI_MODE_APPEND = 1,
    MPI_MODE_CREATE = 2,
    MPI_MODE_DELETE_ON_CLOSE = 4,
    MPI_MODE_EXCL = 8,
    MPI_MODE_RDONLY = 16,
    MPI_MODE_RDWR = 32,
    MPI_MODE_SEQUENTIAL = 64,
    MPI_MODE_UNIQUE_OPEN = 128,
    MPI_MODE_WRONLY = 256,
    MPI_MODE_NOCHECK = 1024,
    MPI_MODE_NOPRECEDE = 2048,
    MPI_MODE_NOPUT = 4096,
    MPI_MODE_NOSTORE = 8192,
    MPI_MODE_NOSUCCEED = 16384
};

/* Windows. */
O2G_FUNCTION(int, MPI_Win_create, (void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                                   MPI_Comm comm, MPI_Win *win));
O2G_FUNCTION(int, MPI_Win_create_c, (void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                                     MPI_Comm comm, MPI_Win *win));
O2G_FUNCTION(int, MPI_Win_allocate, (MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                     void *baseptr, MPI_Win *win));
O2G_FUNCTION(int, MPI_Win_allocate_c, (MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                                       MPI_Comm comm, void *baseptr, MPI_Win *win));
O2G_FUNCTION(int, MPI_Win_allocate_shared, (MPI_Aint size, int disp_unit, MPI_Info info,
                                            MPI_Comm comm, void *baseptr, MPI_Win *win));
O2G_FUNCTION(int, MPI_Win_allocate_shared_c, (MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                                              MPI_Comm comm, void *baseptr, MPI_Win *win));
O2G_FUNCTION(int, MPI_Win_shared_query, (MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                                         void *baseptr));
O2G_FUNCTION(int, MPI_Win_shared_query_c, (MPI_Win win, int rank, MPI_Aint *size,
                                           MPI_Aint *disp_unit, void *baseptr));
O2G_FUNCTION(int, MPI_Win_create_dynamic, (MPI_Info info, MPI_Comm comm, MPI_Win *win));
O2G_FUNCTION(int, MPI_Win_attach, (MPI_Win win, void *base, MPI_Aint size));
O2G_FUNCTION(int, MPI_Win_detach, (MPI_Win win, const void *base));
O2G_FUNCTION(int, MPI_Win_free, (MPI_Win *win));
O2G_FUNCTION(int, MPI_Win_get_group, (MPI_Win win, MPI_Group *group));
O2G_FUNCTION(int, MPI_Win_set_info, (MPI_Win win, MPI_Info info));
O2G_FUNCTION(int, MPI_Win_get_info, (MPI_Win win, MPI_Info *info_used));

/* Communication calls. */
O2G_FUNCTION(int, MPI_Put, (const void *origin_addr, int origin_count,
                            MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                            int target_count, MPI_Datatype target_datatype, MPI_Win win));
O2G_FUNCTION(int, MPI_Put_c, (const void *origin_addr, MPI_Count origin_count,
                              MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                              MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win));
O2G_FUNCTION(int, MPI_Get, (void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                            int target_rank, MPI_Aint target_disp, int target_count,
                            MPI_Datatype target_datatype, MPI_Win win));
O2G_FUNCTION(int, MPI_Get_c, (void *origin_addr, MPI_Count origin_count,
                              MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                              MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win));
O2G_FUNCTION(int, MPI_Accumulate, (const void *origin_addr, int origin_count,
                                   MPI_Datatype origin_datatype, int target_rank,
                                   MPI_Aint target_disp, int target_count,
                                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win));
O2G_FUNCTION(int, MPI_Accumulate_c, (const void *origin_addr, MPI_Count origin_count,
                                     MPI_Datatype origin_datatype, int target_rank,
                                     MPI_Aint target_disp, MPI_Count target_count,
                                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win));
O2G_FUNCTION(int, MPI_Get_accumulate, (const void *origin_addr, int origin_count,
                                       MPI_Datatype origin_datatype, void *result_addr,
                                       int result_count, MPI_Datatype result_datatype,
                                       int target_rank, MPI_Aint target_disp, int target_count,
                                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win));
O2G_FUNCTION(int, MPI_Get_accumulate_c, (const void *origin_addr, MPI_Count origin_count,
                                         MPI_Datatype origin_datatype, void *result_addr,
                                         MPI_Count result_count, MPI_Datatype result_datatype,
                                         int target_rank, MPI_Aint target_disp,
                                         MPI_Count target_count, MPI_Datatype target_datatype,
                                         MPI_Op op, MPI_Win win));
O2G_FUNCTION(int, MPI_Fetch_and_op, (const void *origin_addr, void *result_addr,
                                     MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                                     MPI_Op op, MPI_Win win));
O2G_FUNCTION(int, MPI_Compare_and_swap, (const void *origin_addr, const void *compare_addr,
                                         void *result_addr, MPI_Datatype datatype, int target_rank,
                                         MPI_Aint target_disp, MPI_Win win));
O2G_FUNCTION(int, MPI_Rput, (const void *origin_addr, int origin_count,
                             MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                             int target_count, MPI_Datatype target_datatype, MPI_Win win,
                             MPI_Request *request));
O2G_FUNCTION(int, MPI_Rput_c, (const void *origin_addr, MPI_Count origin_count,
                               MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                               MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win,
                               MPI_Request *request));
O2G_FUNCTION(int, MPI_Rget, (void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                             int target_rank, MPI_Aint target_disp, int target_count,
                             MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request));
O2G_FUNCTION(int, MPI_Rget_c, (void *origin_addr, MPI_Count origin_count,
                               MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                               MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win,
                               MPI_Request *request));
O2G_FUNCTION(int, MPI_Raccumulate, (const void *origin_addr, int origin_count,
                                    MPI_Datatype origin_datatype, int target_rank,
                                    MPI_Aint target_disp, int target_count,
                                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                                    MPI_Request *request));
O2G_FUNCTION(int, MPI_Raccumulate_c, (const void *origin_addr, MPI_Count origin_count,
                                      MPI_Datatype origin_datatype, int target_rank,
                                      MPI_Aint target_disp, MPI_Count target_count,
                                      MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                                      MPI_Request *request));
O2G_FUNCTION(int, MPI_Rget_accumulate, (const void *origin_addr, int origin_count,
                                        MPI_Datatype origin_datatype, void *result_addr,
                                        int result_count, MPI_Datatype result_datatype,
                                        int target_rank, MPI_Aint target_disp, int target_count,
                                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                                        MPI_Request *request));
O2G_FUNCTION(int, MPI_Rget_accumulate_c, (const void *origin_addr, MPI_Count origin_count,
                                          MPI_Datatype origin_datatype, void *result_addr,
                                          MPI_Count result_count, MPI_Datatype result_datatype,
                                          int target_rank, MPI_Aint target_disp,
                                          MPI_Count target_count, MPI_Datatype target_datatype,
                                          MPI_Op op, MPI_Win win, MPI_Request *request));

/* Synchronization. */
O2G_FUNCTION(int, MPI_Win_fence, (int assert, MPI_Win win));
O2G_FUNCTION(int, MPI_Win_start, (MPI_Group group, int assert, MPI_Win win));
O2G_FUNCTION(int, MPI_Win_complete, (MPI_Win win));
O2G_FUNCTION(int, MPI_Win_post, (MPI_Group group, int assert, MPI_Win win));
O2G_FUNCTION(int, MPI_Win_wait, (MPI_Win win));
O2G_FUNCTION(int, MPI_Win_test, (MPI_Win win, int *flag));
O2G_FUNCTION(int, MPI_Win_lock, (int lock_type, int rank, int assert, MPI_Win win));
O2G_FUNCTION(int, MPI_Win_lock_all, (int assert, MPI_Win win));
O2G_FUNCTION(int, MPI_Win_unlock, (int rank, MPI_Win win));
O2G_FUNCTION(int, MPI_Win_unlock_all, (MPI_Win win));
O2G_FUNCTION(int, MPI_Win_flush, (int rank, MPI_Win win));
O2G_FUNCTION(int, MPI_Win_flush_all, (MPI_Win win));
O2G_FUNCTION(int, MPI_Win_flush_local, (int rank, MPI_Win win));
O2G_FUNCTION(int, MPI_Win_flush_local_all, (MPI_Win win));
O2G_FUNCTION(int, MPI_Win_sync, (MPI_Win win));

/* ------------------------------------------------------------------------
 * Chapter 13: external interfaces
 * ------------------------------------------------------------------------ */

/* Generalized request callbacks. */
typedef int (MPI_Grequest_query_function)(void *extra_state, MPI_Status *status);
typedef int (MPI_Grequest_free_function)(void *extra_state);
typedef int (MPI_Grequest_cancel_function)(void *extra_state, int complete);

/* Generalized requests and status setters. */
O2G_FUNCTION(int, MPI_Grequest_start, (MPI_Grequest_query_function *query_fn,
                                       MPI_Grequest_free_function *free_fn,
                                       MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                                       MPI_Request *request));
O2G_FUNCTION(int, MPI_Grequest_complete, (MPI_Request request));
O2G_FUNCTION(int, MPI_Status_set_elements, (MPI_Status *status, MPI_Datatype datatype, int count));
O2G_FUNCTION(int, MPI_Status_set_elements_c, (MPI_Status *status, MPI_Datatype datatype,
                                              MPI_Count count));
O2G_FUNCTION(int, MPI_Status_set_elements_x, (MPI_Status *status, MPI_Datatype datatype,
                                              MPI_Count count));
O2G_FUNCTION(int, MPI_Status_set_cancelled, (MPI_Status *status, int flag));

/* ------------------------------------------------------------------------
 * Chapter 14: I/O
 * ------------------------------------------------------------------------ */

/* MPI_File_seek's whence, and the displacement that keeps the current one. */
enum {
    MPI_SEEK_CUR = 401,
    MPI_SEEK_END = 402,
    MPI_SEEK_SET = 403
};
#define MPI_DISPLACEMENT_CURRENT ((MPI_Offset)-1)

/* User-defined data representations (MPI_Register_datarep). */
typedef int (MPI_Datarep_extent_function)(MPI_Datatype datatype, MPI_Aint *file_extent,
                                          void *extra_state);
typedef int (MPI_Datarep_conversion_function)(void *userbuf, MPI_Datatype datatype, int count,
                                              void *filebuf, MPI_Offset position,
                                              void *extra_state);
typedef int (MPI_Datarep_conversion_function_c)(void *userbuf, MPI_Datatype datatype,
                                                MPI_Count count, void *filebuf,
                                                MPI_Offset position, void *extra_state);
#define MPI_CONVERSION_FN_NULL   ((MPI_Datarep_conversion_function *)0)
#define MPI_CONVERSION_FN_NULL_C ((MPI_Datarep_conversion_function_c *)0)

/* Files. */
O2G_FUNCTION(int, MPI_File_open, (MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                                  MPI_File *fh));
O2G_FUNCTION(int, MPI_File_close, (MPI_File *fh));
O2G_FUNCTION(int, MPI_File_delete, (const char *filename, MPI_Info info));
O2G_FUNCTION(int, MPI_File_set_size, (MPI_File fh, MPI_Offset size));
O2G_FUNCTION(int, MPI_File_preallocate, (MPI_File fh, MPI_Offset size));
O2G_FUNCTION(int, MPI_File_get_size, (MPI_File fh, MPI_Offset *size));
O2G_FUNCTION(int, MPI_File_get_group, (MPI_File fh, MPI_Group *group));
O2G_FUNCTION(int, MPI_File_get_amode, (MPI_File fh, int *amode));
O2G_FUNCTION(int, MPI_File_set_info, (MPI_File fh, MPI_Info info));
O2G_FUNCTION(int, MPI_File_get_info, (MPI_File fh, MPI_Info *info_used));

/* Views. */
O2G_FUNCTION(int, MPI_File_set_view, (MPI_File fh, MPI_Offset disp, MPI_Datatype etype,
                                      MPI_Datatype filetype, const char *datarep, MPI_Info info));
O2G_FUNCTION(int, MPI_File_get_view, (MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype,
                                      MPI_Datatype *filetype, char *datarep));

/* Data access: explicit offsets. */
O2G_FUNCTION(int, MPI_File_read_at, (MPI_File fh, MPI_Offset offset, void *buf, int count,
                                     MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_at_c, (MPI_File fh, MPI_Offset offset, void *buf, MPI_Count count,
                                       MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_at_all, (MPI_File fh, MPI_Offset offset, void *buf, int count,
                                         MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_at_all_c, (MPI_File fh, MPI_Offset offset, void *buf,
                                           MPI_Count count, MPI_Datatype datatype,
                                           MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_at, (MPI_File fh, MPI_Offset offset, const void *buf, int count,
                                      MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_at_c, (MPI_File fh, MPI_Offset offset, const void *buf,
                                        MPI_Count count, MPI_Datatype datatype,
                                        MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_at_all, (MPI_File fh, MPI_Offset offset, const void *buf,
                                          int count, MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_at_all_c, (MPI_File fh, MPI_Offset offset, const void *buf,
                                            MPI_Count count, MPI_Datatype datatype,
                                            MPI_Status *status));
O2G_FUNCTION(int, MPI_File_iread_at, (MPI_File fh, MPI_Offset offset, void *buf, int count,
                                      MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iread_at_c, (MPI_File fh, MPI_Offset offset, void *buf, MPI_Count count,
                                        MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iread_at_all, (MPI_File fh, MPI_Offset offset, void *buf, int count,
                                          MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iread_at_all_c, (MPI_File fh, MPI_Offset offset, void *buf,
                                            MPI_Count count, MPI_Datatype datatype,
                                            MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite_at, (MPI_File fh, MPI_Offset offset, const void *buf, int count,
                                       MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite_at_c, (MPI_File fh, MPI_Offset offset, const void *buf,
                                         MPI_Count count, MPI_Datatype datatype,
                                         MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite_at_all, (MPI_File fh, MPI_Offset offset, const void *buf,
                                           int count, MPI_Datatype datatype,
                                           MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite_at_all_c, (MPI_File fh, MPI_Offset offset, const void *buf,
                                             MPI_Count count, MPI_Datatype datatype,
                                             MPI_Request *request));

/* Data access: individual file pointers. */
O2G_FUNCTION(int, MPI_File_read, (MPI_File fh, void *buf, int count, MPI_Datatype datatype,
                                  MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_c, (MPI_File fh, void *buf, MPI_Count count, MPI_Datatype datatype,
                                    MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_all, (MPI_File fh, void *buf, int count, MPI_Datatype datatype,
                                      MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_all_c, (MPI_File fh, void *buf, MPI_Count count,
                                        MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write, (MPI_File fh, const void *buf, int count, MPI_Datatype datatype,
                                   MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_c, (MPI_File fh, const void *buf, MPI_Count count,
                                     MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_all, (MPI_File fh, const void *buf, int count,
                                       MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_all_c, (MPI_File fh, const void *buf, MPI_Count count,
                                         MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_iread, (MPI_File fh, void *buf, int count, MPI_Datatype datatype,
                                   MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iread_c, (MPI_File fh, void *buf, MPI_Count count,
                                     MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iread_all, (MPI_File fh, void *buf, int count, MPI_Datatype datatype,
                                       MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iread_all_c, (MPI_File fh, void *buf, MPI_Count count,
                                         MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite, (MPI_File fh, const void *buf, int count, MPI_Datatype datatype,
                                    MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite_c, (MPI_File fh, const void *buf, MPI_Count count,
                                      MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite_all, (MPI_File fh, const void *buf, int count,
                                        MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite_all_c, (MPI_File fh, const void *buf, MPI_Count count,
                                          MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_seek, (MPI_File fh, MPI_Offset offset, int whence));
O2G_FUNCTION(int, MPI_File_get_position, (MPI_File fh, MPI_Offset *offset));
O2G_FUNCTION(int, MPI_File_get_byte_offset, (MPI_File fh, MPI_Offset offset, MPI_Offset *disp));

/* Data access: shared file pointers. */
O2G_FUNCTION(int, MPI_File_read_shared, (MPI_File fh, void *buf, int count, MPI_Datatype datatype,
                                         MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_shared_c, (MPI_File fh, void *buf, MPI_Count count,
                                           MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_shared, (MPI_File fh, const void *buf, int count,
                                          MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_shared_c, (MPI_File fh, const void *buf, MPI_Count count,
                                            MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_iread_shared, (MPI_File fh, void *buf, int count, MPI_Datatype datatype,
                                          MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iread_shared_c, (MPI_File fh, void *buf, MPI_Count count,
                                            MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite_shared, (MPI_File fh, const void *buf, int count,
                                           MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_iwrite_shared_c, (MPI_File fh, const void *buf, MPI_Count count,
                                             MPI_Datatype datatype, MPI_Request *request));
O2G_FUNCTION(int, MPI_File_read_ordered, (MPI_File fh, void *buf, int count, MPI_Datatype datatype,
                                          MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_ordered_c, (MPI_File fh, void *buf, MPI_Count count,
                                            MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_ordered, (MPI_File fh, const void *buf, int count,
                                           MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_ordered_c, (MPI_File fh, const void *buf, MPI_Count count,
                                             MPI_Datatype datatype, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_seek_shared, (MPI_File fh, MPI_Offset offset, int whence));
O2G_FUNCTION(int, MPI_File_get_position_shared, (MPI_File fh, MPI_Offset *offset));

/* Split collective data access. */
O2G_FUNCTION(int, MPI_File_read_at_all_begin, (MPI_File fh, MPI_Offset offset, void *buf,
                                               int count, MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_read_at_all_begin_c, (MPI_File fh, MPI_Offset offset, void *buf,
                                                 MPI_Count count, MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_read_at_all_end, (MPI_File fh, void *buf, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_at_all_begin, (MPI_File fh, MPI_Offset offset, const void *buf,
                                                int count, MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_write_at_all_begin_c, (MPI_File fh, MPI_Offset offset, const void *buf,
                                                  MPI_Count count, MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_write_at_all_end, (MPI_File fh, const void *buf, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_all_begin, (MPI_File fh, void *buf, int count,
                                            MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_read_all_begin_c, (MPI_File fh, void *buf, MPI_Count count,
                                              MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_read_all_end, (MPI_File fh, void *buf, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_all_begin, (MPI_File fh, const void *buf, int count,
                                             MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_write_all_begin_c, (MPI_File fh, const void *buf, MPI_Count count,
                                               MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_write_all_end, (MPI_File fh, const void *buf, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_read_ordered_begin, (MPI_File fh, void *buf, int count,
                                                MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_read_ordered_begin_c, (MPI_File fh, void *buf, MPI_Count count,
                                                  MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_read_ordered_end, (MPI_File fh, void *buf, MPI_Status *status));
O2G_FUNCTION(int, MPI_File_write_ordered_begin, (MPI_File fh, const void *buf, int count,
                                                 MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_write_ordered_begin_c, (MPI_File fh, const void *buf, MPI_Count count,
                                                   MPI_Datatype datatype));
O2G_FUNCTION(int, MPI_File_write_ordered_end, (MPI_File fh, const void *buf, MPI_Status *status));

/* File interoperability and consistency. */
O2G_FUNCTION(int, MPI_File_get_type_extent, (MPI_File fh, MPI_Datatype datatype,
                                             MPI_Aint *extent));
O2G_FUNCTION(int, MPI_File_get_type_extent_c, (MPI_File fh, MPI_Datatype datatype,
                                               MPI_Count *extent));
O2G_FUNCTION(int, MPI_Register_datarep, (const char *datarep,
                                         MPI_Datarep_conversion_function *read_conversion_fn,
                                         MPI_Datarep_conversion_function *write_conversion_fn,
                                         MPI_Datarep_extent_function *dtype_file_extent_fn,
                                         void *extra_state));
O2G_FUNCTION(int, MPI_Register_datarep_c, (const char *datarep,
                                           MPI_Datarep_conversion_function_c *read_conversion_fn,
                                           MPI_Datarep_conversion_function_c *write_conversion_fn,
                                           MPI_Datarep_extent_function *dtype_file_extent_fn,
                                           void *extra_state));
O2G_FUNCTION(int, MPI_File_set_atomicity, (MPI_File fh, int flag));
O2G_FUNCTION(int, MPI_File_get_atomicity, (MPI_File fh, int *flag));
O2G_FUNCTION(int, MPI_File_sync, (MPI_File fh));

/* ------------------------------------------------------------------------
 * Chapter 15: tool support
 * ------------------------------------------------------------------------ */

/* Error codes of the tool information interface (MPI_T_*). */
enum {
    MPI_T_ERR_CANNOT_INIT = 1001,
    MPI_T_ERR_NOT_ACCESSIBLE = 1002,
    MPI_T_ERR_NOT_INITIALIZED = 1003,
    MPI_T_ERR_NOT_SUPPORTED = 1004,
    MPI_T_ERR_MEMORY = 1005,
    MPI_T_ERR_INVALID = 1006,
    MPI_T_ERR_INVALID_INDEX = 1007,
    MPI_T_ERR_INVALID_ITEM = 1008, /* deprecated since MPI-4.0 */
    MPI_T_ERR_INVALID_SESSION = 1009,
    MPI_T_ERR_INVALID_HANDLE = 1010,
    MPI_T_ERR_INVALID_NAME = 1011,
    MPI_T_ERR_OUT_OF_HANDLES = 1012,
    MPI_T_ERR_OUT_OF_SESSIONS = 1013,
    MPI_T_ERR_CVAR_SET_NOT_NOW = 1014,
    MPI_T_ERR_CVAR_SET_NEVER = 1015,
    MPI_T_ERR_PVAR_NO_WRITE = 1016,
    MPI_T_ERR_PVAR_NO_STARTSTOP = 1017,
    MPI_T_ERR_PVAR_NO_ATOMIC = 1018
};

/* Tool interface handles and their null values. */
typedef struct MPI_ABI_T_enum *MPI_T_enum;
typedef struct MPI_ABI_T_cvar_handle *MPI_T_cvar_handle;
typedef struct MPI_ABI_T_pvar_handle *MPI_T_pvar_handle;
typedef struct MPI_ABI_T_pvar_session *MPI_T_pvar_session;
typedef struct MPI_ABI_T_event_registration *MPI_T_event_registration;
typedef struct MPI_ABI_T_event_instance *MPI_T_event_instance;
#define MPI_T_ENUM_NULL         O2G_HANDLE(MPI_T_enum, 0)
#define MPI_T_CVAR_HANDLE_NULL  O2G_HANDLE(MPI_T_cvar_handle, 0)
#define MPI_T_PVAR_HANDLE_NULL  O2G_HANDLE(MPI_T_pvar_handle, 0)
#define MPI_T_PVAR_ALL_HANDLES  O2G_HANDLE(MPI_T_pvar_handle, 1)
#define MPI_T_PVAR_SESSION_NULL O2G_HANDLE(MPI_T_pvar_session, 0)

/* Verbosity levels: audience (user, tuner, MPI developer) and detail. */
enum {
    MPI_T_VERBOSITY_USER_BASIC = 0x09,
    MPI_T_VERBOSITY_USER_DETAIL = 0x0a,
    MPI_T_VERBOSITY_USER_ALL = 0x0c,
    MPI_T_VERBOSITY_TUNER_BASIC = 0x11,
    MPI_T_VERBOSITY_TUNER_DETAIL = 0x12,
    MPI_T_VERBOSITY_TUNER_ALL = 0x14,
    MPI_T_VERBOSITY_MPIDEV_BASIC = 0x21,
    MPI_T_VERBOSITY_MPIDEV_DETAIL = 0x22,
    MPI_T_VERBOSITY_MPIDEV_ALL = 0x24
};

/* What kind of MPI object a variable is bound to. */
enum {
    MPI_T_BIND_NO_OBJECT = 1,
    MPI_T_BIND_MPI_COMM = 2,
    MPI_T_BIND_MPI_DATATYPE = 3,
    MPI_T_BIND_MPI_ERRHANDLER = 4,
    MPI_T_BIND_MPI_FILE = 5,
    MPI_T_BIND_MPI_GROUP = 6,
    MPI_T_BIND_MPI_OP = 7,
    MPI_T_BIND_MPI_REQUEST = 8,
    MPI_T_BIND_MPI_WIN = 9,
    MPI_T_BIND_MPI_MESSAGE = 10,
    MPI_T_BIND_MPI_INFO = 11,
    MPI_T_BIND_MPI_SESSION = 12
};

/* Scope of a control variable: who may change it and how consistently. */
enum {
    MPI_T_SCOPE_CONSTANT = 1,
    MPI_T_SCOPE_READONLY = 2,
    MPI_T_SCOPE_LOCAL = 3,
    MPI_T_SCOPE_GROUP = 4,
    MPI_T_SCOPE_GROUP_EQ = 5,
    MPI_T_SCOPE_ALL = 6,
    MPI_T_SCOPE_ALL_EQ = 7
};

/* Classes of performance variables. */
enum {
    MPI_T_PVAR_CLASS_STATE = 1,
    MPI_T_PVAR_CLASS_LEVEL = 2,
    MPI_T_PVAR_CLASS_SIZE = 3,
    MPI_T_PVAR_CLASS_PERCENTAGE = 4,
    MPI_T_PVAR_CLASS_HIGHWATERMARK = 5,
    MPI_T_PVAR_CLASS_LOWWATERMARK = 6,
    MPI_T_PVAR_CLASS_COUNTER = 7,
    MPI_T_PVAR_CLASS_AGGREGATE = 8,
    MPI_T_PVAR_CLASS_TIMER = 9,
    MPI_T_PVAR_CLASS_GENERIC = 10
};

/* Events: the safety an event callback requires, timestamp ordering of a
 * source, and the callbacks. */
typedef enum MPI_T_cb_safety {
    MPI_T_CB_REQUIRE_NONE = 0x00,
    MPI_T_CB_REQUIRE_MPI_RESTRICTED = 0x03,
    MPI_T_CB_REQUIRE_THREAD_SAFE = 0x0f,
    MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE = 0x3f
} MPI_T_cb_safety;
typedef enum MPI_T_source_order {
    MPI_T_SOURCE_ORDERED = 1,
    MPI_T_SOURCE_UNORDERED = 2
} MPI_T_source_order;
typedef void (MPI_T_event_cb_function)(MPI_T_event_instance event_instance,
                                       MPI_T_event_registration event_registration,
                                       MPI_T_cb_safety cb_safety, void *user_data);
typedef void (MPI_T_event_free_cb_function)(MPI_T_event_registration event_registration,
                                            MPI_T_cb_safety cb_safety, void *user_data);
typedef void (MPI_T_event_dropped_cb_function)(MPI_Count count,
                                               MPI_T_event_registration event_registration,
                                               int source_index, MPI_T_cb_safety cb_safety,
                                               void *user_data);

/* Profiling interface. */
O2G_FUNCTION(int, MPI_Pcontrol, (const int level, ...));

/* The MPI tool information interface. */
O2G_FUNCTION(int, MPI_T_init_thread, (int required, int *provided));
O2G_FUNCTION(int, MPI_T_finalize, (void));
O2G_FUNCTION(int, MPI_T_enum_get_info, (MPI_T_enum enumtype, int *num, char *name, int *name_len));
O2G_FUNCTION(int, MPI_T_enum_get_item, (MPI_T_enum enumtype, int indx, int *value, char *name,
                                        int *name_len));
O2G_FUNCTION(int, MPI_T_cvar_get_num, (int *num_cvar));
O2G_FUNCTION(int, MPI_T_cvar_get_info, (int cvar_index, char *name, int *name_len, int *verbosity,
                                        MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc,
                                        int *desc_len, int *bind, int *scope));
O2G_FUNCTION(int, MPI_T_cvar_get_index, (const char *name, int *cvar_index));
O2G_FUNCTION(int, MPI_T_cvar_handle_alloc, (int cvar_index, void *obj_handle,
                                            MPI_T_cvar_handle *handle, int *count));
O2G_FUNCTION(int, MPI_T_cvar_handle_free, (MPI_T_cvar_handle *handle));
O2G_FUNCTION(int, MPI_T_cvar_read, (MPI_T_cvar_handle handle, void *buf));
O2G_FUNCTION(int, MPI_T_cvar_write, (MPI_T_cvar_handle handle, const void *buf));
O2G_FUNCTION(int, MPI_T_pvar_get_num, (int *num_pvar));
O2G_FUNCTION(int, MPI_T_pvar_get_info, (int pvar_index, char *name, int *name_len, int *verbosity,
                                        int *var_class, MPI_Datatype *datatype,
                                        MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind,
                                        int *readonly, int *continuous, int *atomic));
O2G_FUNCTION(int, MPI_T_pvar_get_index, (const char *name, int var_class, int *pvar_index));
O2G_FUNCTION(int, MPI_T_pvar_session_create, (MPI_T_pvar_session *session));
O2G_FUNCTION(int, MPI_T_pvar_session_free, (MPI_T_pvar_session *session));
O2G_FUNCTION(int, MPI_T_pvar_handle_alloc, (MPI_T_pvar_session session, int pvar_index,
                                            void *obj_handle, MPI_T_pvar_handle *handle,
                                            int *count));
O2G_FUNCTION(int, MPI_T_pvar_handle_free, (MPI_T_pvar_session session, MPI_T_pvar_handle *handle));
O2G_FUNCTION(int, MPI_T_pvar_start, (MPI_T_pvar_session session, MPI_T_pvar_handle handle));
O2G_FUNCTION(int, MPI_T_pvar_stop, (MPI_T_pvar_session session, MPI_T_pvar_handle handle));
O2G_FUNCTION(int, MPI_T_pvar_read, (MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                                    void *buf));
O2G_FUNCTION(int, MPI_T_pvar_write, (MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                                     const void *buf));
O2G_FUNCTION(int, MPI_T_pvar_reset, (MPI_T_pvar_session session, MPI_T_pvar_handle handle));
O2G_FUNCTION(int, MPI_T_pvar_readreset, (MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                                         void *buf));
O2G_FUNCTION(int, MPI_T_event_get_num, (int *num_events));
O2G_FUNCTION(int, MPI_T_event_get_info, (int event_index, char *name, int *name_len,
                                         int *verbosity, MPI_Datatype array_of_datatypes[],
                                         MPI_Aint array_of_displacements[], int *num_elements,
                                         MPI_T_enum *enumtype, MPI_Info *info, char *desc,
                                         int *desc_len, int *bind));
O2G_FUNCTION(int, MPI_T_event_get_index, (const char *name, int *event_index));
O2G_FUNCTION(int, MPI_T_event_handle_alloc, (int event_index, void *obj_handle, MPI_Info info,
                                             MPI_T_event_registration *event_registration));
O2G_FUNCTION(int, MPI_T_event_handle_set_info, (MPI_T_event_registration event_registration,
                                                MPI_Info info));
O2G_FUNCTION(int, MPI_T_event_handle_get_info, (MPI_T_event_registration event_registration,
                                                MPI_Info *info_used));
O2G_FUNCTION(int, MPI_T_event_register_callback, (MPI_T_event_registration event_registration,
                                                  MPI_T_cb_safety cb_safety, MPI_Info info,
                                                  void *user_data,
                                                  MPI_T_event_cb_function event_cb_function));
O2G_FUNCTION(int, MPI_T_event_callback_set_info, (MPI_T_event_registration event_registration,
                                                  MPI_T_cb_safety cb_safety, MPI_Info info));
O2G_FUNCTION(int, MPI_T_event_callback_get_info, (MPI_T_event_registration event_registration,
                                                  MPI_T_cb_safety cb_safety, MPI_Info *info_used));
O2G_FUNCTION(int, MPI_T_event_handle_free, (MPI_T_event_registration event_registration,
                                            void *user_data,
                                            MPI_T_event_free_cb_function free_cb_function));
O2G_FUNCTION(int, MPI_T_event_set_dropped_handler,
             (MPI_T_event_registration event_registration,
              MPI_T_event_dropped_cb_function dropped_cb_function));
O2G_FUNCTION(int, MPI_T_event_read, (MPI_T_event_instance event_instance, int element_index,
                                     void *buffer));
O2G_FUNCTION(int, MPI_T_event_copy, (MPI_T_event_instance event_instance, void *buffer));
O2G_FUNCTION(int, MPI_T_event_get_timestamp, (MPI_T_event_instance event_instance,
                                              MPI_Count *event_timestamp));
O2G_FUNCTION(int, MPI_T_event_get_source, (MPI_T_event_instance event_instance,
                                           int *source_index));
O2G_FUNCTION(int, MPI_T_source_get_num, (int *num_sources));
O2G_FUNCTION(int, MPI_T_source_get_info, (int source_index, char *name, int *name_len, char *desc,
                                          int *desc_len, MPI_T_source_order *ordering,
                                          MPI_Count *ticks_per_second, MPI_Count *max_ticks,
                                          MPI_Info *info));
O2G_FUNCTION(int, MPI_T_source_get_timestamp, (int source_index, MPI_Count *timestamp));
O2G_FUNCTION(int, MPI_T_category_get_num, (int *num_cat));
O2G_FUNCTION(int, MPI_T_category_get_info, (int cat_index, char *name, int *name_len, char *desc,
                                            int *desc_len, int *num_cvars, int *num_pvars,
                                            int *num_categories));
O2G_FUNCTION(int, MPI_T_category_get_index, (const char *name, int *cat_index));
O2G_FUNCTION(int, MPI_T_category_get_cvars, (int cat_index, int len, int indices[]));
O2G_FUNCTION(int, MPI_T_category_get_pvars, (int cat_index, int len, int indices[]));
O2G_FUNCTION(int, MPI_T_category_get_events, (int cat_index, int len, int indices[]));
O2G_FUNCTION(int, MPI_T_category_get_num_events, (int cat_index, int *num_events));
O2G_FUNCTION(int, MPI_T_category_get_categories, (int cat_index, int len, int indices[]));
O2G_FUNCTION(int, MPI_T_category_changed, (int *update_number));

/* ------------------------------------------------------------------------
 * Chapter 19: language bindings (C and Fortran interoperability)
 * ------------------------------------------------------------------------ */

/* A Fortran INTEGER, and the Fortran status layouts: a
 * MPI_F_STATUS_SIZE array with the public fields at the given indices, and
 * the Fortran 2008 status, laid out like MPI_Status. */
typedef int MPI_Fint;
typedef MPI_Status MPI_F08_Status;
enum {
    MPI_F_STATUS_SIZE = 8,
    MPI_F_SOURCE = 0,
    MPI_F_TAG = 1,
    MPI_F_ERROR = 2
};
#define MPI_F_STATUS_IGNORE     ((MPI_Fint *)0)
#define MPI_F_STATUSES_IGNORE   ((MPI_Fint *)0)
#define MPI_F08_STATUS_IGNORE   ((MPI_F08_Status *)0)
#define MPI_F08_STATUSES_IGNORE ((MPI_F08_Status *)0)

/* The type classes of MPI_Type_match_size. */
enum {
    MPI_TYPECLASS_INTEGER = 192,
    MPI_TYPECLASS_REAL = 193,
    MPI_TYPECLASS_COMPLEX = 194
};

/* Fortran support from C. */
O2G_FUNCTION(int, MPI_Type_create_f90_real, (int p, int r, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_f90_complex, (int p, int r, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_create_f90_integer, (int r, MPI_Datatype *newtype));
O2G_FUNCTION(int, MPI_Type_match_size, (int typeclass, int size, MPI_Datatype *datatype));
O2G_FUNCTION(int, MPI_Status_f2c, (const MPI_Fint *f_status, MPI_Status *c_status));
O2G_FUNCTION(int, MPI_Status_c2f, (const MPI_Status *c_status, MPI_Fint *f_status));
O2G_FUNCTION(int, MPI_Status_f082c, (const MPI_F08_Status *f08_status, MPI_Status *c_status));
O2G_FUNCTION(int, MPI_Status_c2f08, (const MPI_Status *c_status, MPI_F08_Status *f08_status));

/* Handle conversion between C and Fortran. */
O2G_FUNCTION(MPI_Fint, MPI_Comm_c2f, (MPI_Comm comm));
O2G_FUNCTION(MPI_Comm, MPI_Comm_f2c, (MPI_Fint comm));
O2G_FUNCTION(MPI_Fint, MPI_Errhandler_c2f, (MPI_Errhandler errhandler));
O2G_FUNCTION(MPI_Errhandler, MPI_Errhandler_f2c, (MPI_Fint errhandler));
O2G_FUNCTION(MPI_Fint, MPI_File_c2f, (MPI_File file));
O2G_FUNCTION(MPI_File, MPI_File_f2c, (MPI_Fint file));
O2G_FUNCTION(MPI_Fint, MPI_Group_c2f, (MPI_Group group));
O2G_FUNCTION(MPI_Group, MPI_Group_f2c, (MPI_Fint group));
O2G_FUNCTION(MPI_Fint, MPI_Info_c2f, (MPI_Info info));
O2G_FUNCTION(MPI_Info, MPI_Info_f2c, (MPI_Fint info));
O2G_FUNCTION(MPI_Fint, MPI_Message_c2f, (MPI_Message message));
O2G_FUNCTION(MPI_Message, MPI_Message_f2c, (MPI_Fint message));
O2G_FUNCTION(MPI_Fint, MPI_Op_c2f, (MPI_Op op));
O2G_FUNCTION(MPI_Op, MPI_Op_f2c, (MPI_Fint op));
O2G_FUNCTION(MPI_Fint, MPI_Request_c2f, (MPI_Request request));
O2G_FUNCTION(MPI_Request, MPI_Request_f2c, (MPI_Fint request));
O2G_FUNCTION(MPI_Fint, MPI_Session_c2f, (MPI_Session session));
O2G_FUNCTION(MPI_Session, MPI_Session_f2c, (MPI_Fint session));
O2G_FUNCTION(MPI_Fint, MPI_Type_c2f, (MPI_Datatype datatype));
O2G_FUNCTION(MPI_Datatype, MPI_Type_f2c, (MPI_Fint datatype));
O2G_FUNCTION(MPI_Fint, MPI_Win_c2f, (MPI_Win win));
O2G_FUNCTION(MPI_Win, MPI_Win_f2c, (MPI_Fint win));

/* ------------------------------------------------------------------------
 * Chapter 20: application binary interface
 * ------------------------------------------------------------------------ */

/* ABI version, Fortran ABI information. */
O2G_FUNCTION(int, MPI_Abi_get_version, (int *abi_major, int *abi_minor));
O2G_FUNCTION(int, MPI_Abi_get_info, (MPI_Info *info));
O2G_FUNCTION(int, MPI_Abi_get_fortran_info, (MPI_Info *info));
O2G_FUNCTION(int, MPI_Abi_set_fortran_info, (MPI_Info info));
O2G_FUNCTION(int, MPI_Abi_get_fortran_booleans, (int logical_size, void *logical_true,
                                                 void *logical_false, int *is_set));
O2G_FUNCTION(int, MPI_Abi_set_fortran_booleans, (int logical_size, void *logical_true,
                                                 void *logical_false));

/* Handles as integers. */
O2G_FUNCTION(int, MPI_Comm_toint, (MPI_Comm comm));
O2G_FUNCTION(MPI_Comm, MPI_Comm_fromint, (int comm));
O2G_FUNCTION(int, MPI_Errhandler_toint, (MPI_Errhandler errhandler));
O2G_FUNCTION(MPI_Errhandler, MPI_Errhandler_fromint, (int errhandler));
O2G_FUNCTION(int, MPI_File_toint, (MPI_File file));
O2G_FUNCTION(MPI_File, MPI_File_fromint, (int file));
O2G_FUNCTION(int, MPI_Group_toint, (MPI_Group group));
O2G_FUNCTION(MPI_Group, MPI_Group_fromint, (int group));
O2G_FUNCTION(int, MPI_Info_toint, (MPI_Info info));
O2G_FUNCTION(MPI_Info, MPI_Info_fromint, (int info));
O2G_FUNCTION(int, MPI_Message_toint, (MPI_Message message));
O2G_FUNCTION(MPI_Message, MPI_Message_fromint, (int message));
O2G_FUNCTION(int, MPI_Op_toint, (MPI_Op op));
O2G_FUNCTION(MPI_Op, MPI_Op_fromint, (int op));
O2G_FUNCTION(int, MPI_Request_toint, (MPI_Request request));
O2G_FUNCTION(MPI_Request, MPI_Request_fromint, (int request));
O2G_FUNCTION(int, MPI_Session_toint, (MPI_Session session));
O2G_FUNCTION(MPI_Session, MPI_Session_fromint, (int session));
O2G_FUNCTION(int, MPI_Type_toint, (MPI_Datatype datatype));
O2G_FUNCTION(MPI_Datatype, MPI_Type_fromint, (int datatype));
O2G_FUNCTION(int, MPI_Win_toint, (MPI_Win win));
O2G_FUNCTION(MPI_Win, MPI_Win_fromint, (int win));

#undef O2G_FUNCTION

#ifdef __cplusplus
}
#endif

#endif /* O2G_MPI_H */
