C     Fixed-form FORTRAN 77 with mpif.h: communicators (split, dup,
C     free, compare), groups, names and other strings, LOGICAL flags,
C     attributes, error strings, the environment's info.
      PROGRAM LEGACY
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NPROCS, HALF, HRANK, HSIZE, DUP, RES, I
      INTEGER GWORLD, GHALF, GSIZE, LEN, REQ, STATUS(MPI_STATUS_SIZE)
      INTEGER INFO
      INTEGER (KIND=MPI_ADDRESS_KIND) TAGUB
      LOGICAL FLAG
      CHARACTER*(MPI_MAX_PROCESSOR_NAME) PNAME
      CHARACTER*(MPI_MAX_OBJECT_NAME) CNAME
      CHARACTER*(MPI_MAX_ERROR_STRING) ESTR
      DOUBLE PRECISION T0

      CALL MPI_INITIALIZED(FLAG, IERR)
      IF (FLAG) CALL FAIL('initialized before MPI_INIT')
      CALL MPI_INIT(IERR)
      CALL MPI_INITIALIZED(FLAG, IERR)
      IF (.NOT. FLAG) CALL FAIL('not initialized after MPI_INIT')
      T0 = MPI_WTIME()
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NPROCS, IERR)

C     Split into even and odd ranks.
      CALL MPI_COMM_SPLIT(MPI_COMM_WORLD, MOD(RANK, 2), RANK, HALF,
     &                    IERR)
      CALL MPI_COMM_RANK(HALF, HRANK, IERR)
      CALL MPI_COMM_SIZE(HALF, HSIZE, IERR)
      IF (HRANK .NE. RANK / 2) CALL FAIL('split rank')
      IF (HSIZE .NE. (NPROCS + 1 - MOD(RANK, 2)) / 2)
     &    CALL FAIL('split size')
      CALL MPI_COMM_DUP(HALF, DUP, IERR)
      CALL MPI_COMM_COMPARE(HALF, DUP, RES, IERR)
      IF (RES .NE. MPI_CONGRUENT) CALL FAIL('dup is congruent')
      CALL MPI_COMM_FREE(DUP, IERR)
      IF (DUP .NE. MPI_COMM_NULL) CALL FAIL('freed comm is null')

C     Groups: the half's group within the world's.
      CALL MPI_COMM_GROUP(MPI_COMM_WORLD, GWORLD, IERR)
      CALL MPI_COMM_GROUP(HALF, GHALF, IERR)
      CALL MPI_GROUP_SIZE(GHALF, GSIZE, IERR)
      IF (GSIZE .NE. HSIZE) CALL FAIL('group size')
      CALL MPI_GROUP_TRANSLATE_RANKS(GHALF, 1, 0, GWORLD, I, IERR)
      IF (I .NE. MOD(RANK, 2)) CALL FAIL('translate ranks')
      CALL MPI_GROUP_FREE(GHALF, IERR)
      CALL MPI_GROUP_FREE(GWORLD, IERR)
      IF (GWORLD .NE. MPI_GROUP_NULL) CALL FAIL('freed group is null')

C     Strings both ways; blank padding and trimming.
      CALL MPI_COMM_SET_NAME(HALF, 'half     ', IERR)
      CALL MPI_COMM_GET_NAME(HALF, CNAME, LEN, IERR)
      IF (LEN .NE. 4 .OR. CNAME .NE. 'half') CALL FAIL('comm name')
      CALL MPI_GET_PROCESSOR_NAME(PNAME, LEN, IERR)
      IF (LEN .LT. 1 .OR. PNAME(LEN+1:LEN+1) .NE. ' ')
     &    CALL FAIL('processor name')
      CALL MPI_ERROR_STRING(MPI_ERR_TAG, ESTR, LEN, IERR)
      IF (LEN .LT. 1 .OR. INDEX(ESTR, 'tag') .EQ. 0)
     &    CALL FAIL('error string')

C     A predefined attribute, as an address-sized integer.
      CALL MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, TAGUB, FLAG,
     &                       IERR)
      IF (.NOT. FLAG .OR. TAGUB .LT. 32767) CALL FAIL('tag_ub')

C     Test's and iprobe's LOGICAL flags.
      CALL MPI_IRECV(I, 1, MPI_INTEGER, MPI_ANY_SOURCE, 3, HALF, REQ,
     &               IERR)
      CALL MPI_SEND(HRANK, 1, MPI_INTEGER, MOD(HRANK + 1, HSIZE), 3,
     &              HALF, IERR)
      FLAG = .FALSE.
      DO WHILE (.NOT. FLAG)
        CALL MPI_TEST(REQ, FLAG, STATUS, IERR)
      END DO
      IF (STATUS(MPI_TAG) .NE. 3) CALL FAIL('test status')
      IF (I .NE. MOD(HRANK + HSIZE - 1, HSIZE)) CALL FAIL('wait data')
      IF (REQ .NE. MPI_REQUEST_NULL) CALL FAIL('request null')
      CALL MPI_IPROBE(MPI_ANY_SOURCE, 3, HALF, FLAG, STATUS, IERR)
      IF (FLAG) CALL FAIL('nothing left to probe')

      CALL MPI_COMM_FREE(HALF, IERR)
      CALL MPI_INFO_CREATE_ENV(INFO, IERR)
      CALL MPI_INFO_GET_NKEYS(INFO, I, IERR)
      IF (IERR .NE. MPI_SUCCESS .OR. I .LT. 0) CALL FAIL('info_env')
      CALL MPI_INFO_FREE(INFO, IERR)
      IF (INFO .NE. MPI_INFO_NULL) CALL FAIL('info_free')
      IF (MPI_WTIME() .LT. T0) CALL FAIL('wtime went back')
      IF (MPI_WTICK() .LE. 0D0) CALL FAIL('wtick')
      CALL MPI_BARRIER(MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) PRINT '(A, I0, A)', 'legacy: ok on ', NPROCS,
     &    ' ranks'
      CALL MPI_FINALIZE(IERR)
      CALL MPI_FINALIZED(FLAG, IERR)
      IF (.NOT. FLAG) CALL FAIL('finalized')
      END

      SUBROUTINE FAIL(WHAT)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      CHARACTER*(*) WHAT
      INTEGER IERR
      WRITE (0, '(2A)') 'FAILED: ', WHAT
      FLUSH (0)
      CALL MPI_ABORT(MPI_COMM_WORLD, 1, IERR)
      END
