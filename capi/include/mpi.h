/*
 * o2g's mpi.h: the MPI 5.0 standard ABI (MPI 5.0 chapter 20, ABI version
 * 1.0) for the subset of MPI that o2g's libmpi_abi.so.1 implements.
 *
 * Handle types are pointers to incomplete structs; predefined handles,
 * constants, error classes, MPI_Status layout and integer widths are the
 * values the standard ABI fixes, so a program compiled against any
 * standard-ABI mpi.h runs with this library and one compiled against this
 * header runs with any standard-ABI library. Only the functions o2g
 * implements are declared; see capi/README.md.
 */
#ifndef O2G_MPI_H
#define O2G_MPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/* Datatypes. o2g moves all of them; reductions work on the C integer,
 * floating (float, double), logical (C_BOOL) and byte groups. */
#define MPI_DATATYPE_NULL           O2G_HANDLE(MPI_Datatype, 0x200)
#define MPI_AINT                    O2G_HANDLE(MPI_Datatype, 0x201)
#define MPI_COUNT                   O2G_HANDLE(MPI_Datatype, 0x202)
#define MPI_OFFSET                  O2G_HANDLE(MPI_Datatype, 0x203)
#define MPI_PACKED                  O2G_HANDLE(MPI_Datatype, 0x207)
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
#define MPI_DOUBLE                  O2G_HANDLE(MPI_Datatype, 0x214)
#define MPI_C_DOUBLE_COMPLEX        O2G_HANDLE(MPI_Datatype, 0x216)
#define MPI_LONG_DOUBLE             O2G_HANDLE(MPI_Datatype, 0x220)
#define MPI_C_LONG_DOUBLE_COMPLEX   O2G_HANDLE(MPI_Datatype, 0x224)
#define MPI_FLOAT_INT               O2G_HANDLE(MPI_Datatype, 0x228)
#define MPI_DOUBLE_INT              O2G_HANDLE(MPI_Datatype, 0x229)
#define MPI_LONG_INT                O2G_HANDLE(MPI_Datatype, 0x22a)
#define MPI_2INT                    O2G_HANDLE(MPI_Datatype, 0x22b)
#define MPI_SHORT_INT               O2G_HANDLE(MPI_Datatype, 0x22c)
#define MPI_LONG_DOUBLE_INT         O2G_HANDLE(MPI_Datatype, 0x22d)
#define MPI_C_BOOL                  O2G_HANDLE(MPI_Datatype, 0x238)
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
#define MPI_BOTTOM          ((void *)0)
#define MPI_IN_PLACE        ((void *)1)
#define MPI_STATUS_IGNORE   ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)
#define MPI_ERRCODES_IGNORE ((int *)0)
#define MPI_ARGV_NULL       ((char **)0)
#define MPI_ARGVS_NULL      ((char ***)0)

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
#define MPI_BSEND_OVERHEAD 512

/* Wildcards and sentinels (all negative). */
enum {
    MPI_ANY_SOURCE = -1,
    MPI_ANY_TAG = -2,
    MPI_PROC_NULL = -3,
    MPI_ROOT = -4,
    MPI_UNDEFINED = -32766
};

/* Thread levels, comparison results, attribute keys. */
enum {
    MPI_THREAD_SINGLE = 0,
    MPI_THREAD_FUNNELED = 1024,
    MPI_THREAD_SERIALIZED = 2048,
    MPI_THREAD_MULTIPLE = 4096,
    MPI_IDENT = 201,
    MPI_CONGRUENT = 202,
    MPI_SIMILAR = 203,
    MPI_UNEQUAL = 204,
    MPI_KEYVAL_INVALID = 0,
    MPI_TAG_UB = 501,
    MPI_WTIME_IS_GLOBAL = 504
};

/* User reduction function (§6.9.5). */
typedef void (MPI_User_function)(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);

/* Environment (§9, §11). */
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Initialized(int *flag);
int MPI_Finalize(void);
int MPI_Finalized(int *flag);
int MPI_Abort(MPI_Comm comm, int errorcode);
int MPI_Query_thread(int *provided);
int MPI_Get_processor_name(char *name, int *resultlen);
int MPI_Get_version(int *version, int *subversion);
int MPI_Get_library_version(char *version, int *resultlen);
int MPI_Abi_get_version(int *abi_major, int *abi_minor);
int MPI_Error_string(int errorcode, char *string, int *resultlen);
int MPI_Error_class(int errorcode, int *errorclass);
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int MPI_Errhandler_free(MPI_Errhandler *errhandler);
double MPI_Wtime(void);
double MPI_Wtick(void);

/* Communicators (§7). */
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);

/* Point-to-point (§3). */
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status);
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status);
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request);
int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status *array_of_statuses);
int MPI_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status);
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status *array_of_statuses);
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Test_cancelled(const MPI_Status *status, int *flag);
int MPI_Cancel(MPI_Request *request);
int MPI_Request_free(MPI_Request *request);

/* Collectives (§6). */
int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm);
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm);
int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm);
int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm);
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm);
int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);

/* Datatypes (§5) and operations (§6.9). */
int MPI_Type_size(MPI_Datatype datatype, int *size);
int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);
int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_commit(MPI_Datatype *datatype);
int MPI_Type_free(MPI_Datatype *datatype);
int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op);
int MPI_Op_free(MPI_Op *op);

#ifdef __cplusplus
}
#endif

#endif /* O2G_MPI_H */
